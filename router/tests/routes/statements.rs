//! Statement shapes: joins and aliases, subqueries and CTEs, INSERT, UPDATE/DELETE/MERGE, locking,
//! COPY and DDL, transaction control and session statements, statement strings.

use super::*;

#[test]
#[rustfmt::skip]
fn aliases_and_joins() {
    let c = prod();
    c.check("SELECT * FROM orders o WHERE o.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM orders AS o WHERE o.tenant_id = $1", &[T("42")], "0");
    c.check("SELECT * FROM orders WHERE orders.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM public.orders WHERE tenant_id = 3", &[], "1");
    c.check("SELECT * FROM public.orders WHERE public.orders.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM orders o JOIN order_items i ON i.order_id = o.id AND i.tenant_id = o.tenant_id WHERE o.tenant_id = 3", &[], "1");
    // Rule 13: joined on another column, each side must be keyed to the shard (orders' rows
    // on the other shard would be missed).
    c.check("SELECT * FROM orders o JOIN order_items i ON i.order_id = o.id AND i.tenant_id = 3", &[], "err: joins orders o, which is sharded, with order_items i, which is sharded, but not on their sharding keys");
    c.check("SELECT * FROM orders o JOIN order_items i ON i.order_id = o.id AND i.tenant_id = 3 AND o.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM orders o JOIN order_items i USING (tenant_id) WHERE tenant_id = 4", &[], "1");
    c.check("SELECT * FROM orders o, order_items i WHERE o.tenant_id = 3 AND i.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM orders o, order_items i WHERE o.tenant_id = 3 AND i.tenant_id = 4", &[], "1");
    c.check("SELECT * FROM orders o, order_items i WHERE o.tenant_id = 1 AND i.tenant_id = 3", &[], "err: different shards");
    c.check("SELECT * FROM orders o JOIN order_items i ON i.order_id = o.id", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders o JOIN order_items i ON i.order_id = o.id AND i.tenant_id = o.tenant_id", &[], "all");
    c.check("SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id WHERE u.id = 3", &[], "1");
    c.check("SELECT * FROM users WHERE id = 42", &[], "0");
    c.check("SELECT * FROM users u WHERE u.id = $1", &[i8b(100)], "1");
    c.check("SELECT * FROM orders o JOIN countries c ON c.code = o.country WHERE o.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM orders o JOIN countries c ON c.code = o.country", &[], "all");
    c.check("SELECT * FROM orders o LEFT JOIN order_items i ON i.order_id = o.id WHERE o.tenant_id = 3", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders o LEFT JOIN order_items i ON i.order_id = o.id AND i.tenant_id = o.tenant_id WHERE o.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM orders o LEFT JOIN order_items i ON i.tenant_id = 3", &[], "err: but not on their sharding keys");
    // A column that is not the key of the table it names.
    c.check("SELECT * FROM orders o JOIN users u ON true WHERE o.id = 3", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders o WHERE o.customer_id = 3", &[], "all");
    c.check("SELECT * FROM orders WHERE customer_id = 3", &[], "all");
    c.check("SELECT * FROM orders o WHERE o.status = 'x'", &[], "all");
}

#[test]
#[rustfmt::skip]
fn subqueries_and_ctes() {
    let c = prod();
    // A sublink filters the statement's rows; it does not say where they
    // live. It runs where the statement runs (rule 12, see `sublinks`).
    c.check("SELECT * FROM orders WHERE id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)", &[], "err: a subquery reads order_items, which is sharded, on shard 1, but the rest of the statement runs on all shards");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 4)", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 1 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)", &[], "err: on shard 1, but the rest of the statement runs on shard 0");
    c.check("SELECT * FROM (SELECT * FROM orders WHERE tenant_id = 3) s", &[], "1");
    c.check("SELECT * FROM (SELECT * FROM orders WHERE tenant_id = $1) s WHERE s.amount > 5", &[T("42")], "0");
    // A subquery's `*` passes orders' key through (see `resolution`).
    c.check("SELECT * FROM (SELECT * FROM orders) s WHERE s.tenant_id = 3", &[], "1");
    c.check("WITH o AS (SELECT * FROM orders WHERE tenant_id = 3) SELECT * FROM o", &[], "1");
    c.check("WITH o AS (SELECT * FROM orders WHERE tenant_id = 3) SELECT * FROM o JOIN order_items i ON i.order_id = o.id", &[], "err: but not on their sharding keys");
    c.check("WITH o AS (SELECT * FROM orders WHERE tenant_id = 3) SELECT * FROM o JOIN order_items i ON i.order_id = o.id AND i.tenant_id = o.tenant_id", &[], "1");
    c.check("WITH o AS (SELECT * FROM orders) SELECT * FROM o WHERE o.tenant_id = 3", &[], "1");
    c.check("WITH o AS (SELECT * FROM orders) SELECT * FROM o", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 UNION ALL SELECT * FROM orders WHERE tenant_id = 4", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 1 UNION SELECT * FROM orders WHERE tenant_id = 3", &[], "all");
    c.check("SELECT (SELECT count(*) FROM order_items i WHERE i.tenant_id = 3 AND i.order_id = o.id) FROM orders o WHERE o.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id) AND o.tenant_id = $1", &[T("3")], "err: a subquery reads order_items, which is sharded, without its sharding key");
    c.check("SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id) AND o.tenant_id = $1", &[T("3")], "1");
    c.check("SELECT * FROM countries WHERE code IN (SELECT country FROM orders WHERE tenant_id = 3)", &[], "1");
    c.check("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT * FROM t", &[], "any");
}

/// Only the levels that restrict the statement's rows route it: never a
/// sublink, a FROM item on an outer join's nullable side, one UNION arm or an
/// EXCEPT's right arm. Each case here once went to one shard and missed the
/// rows on the others.
#[test]
#[rustfmt::skip]
fn levels_that_do_not_restrict_rows() {
    let c = prod();
    c.check("SELECT * FROM orders WHERE tenant_id = 3 UNION ALL SELECT * FROM orders", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 UNION SELECT * FROM orders WHERE tenant_id = $1", &[N], "all");
    // (A sublink keyed to one shard must then have the whole statement
    // there, which a statement reading every shard cannot: rule 12.)
    c.check("SELECT * FROM orders WHERE tenant_id = 3 OR id IN (SELECT id FROM orders WHERE tenant_id = 4)", &[], "err: on shard 1, but the rest of the statement runs on all shards");
    c.check("SELECT o.*, (SELECT count(*) FROM order_items i WHERE i.tenant_id = 3) FROM orders o", &[], "err: on shard 1, but the rest of the statement runs on all shards");
    c.check("SELECT (SELECT max(amount) FROM orders WHERE tenant_id = 3)", &[], "1");
    c.check("SELECT * FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id AND i.tenant_id = 3)", &[], "err: on shard 1, but the rest of the statement runs on all shards");
    c.check("SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM order_items WHERE tenant_id = 3)", &[], "err: on shard 1, but the rest of the statement runs on all shards");
    c.check("SELECT * FROM orders WHERE amount > ALL (SELECT amount FROM order_items WHERE tenant_id = 3)", &[], "err: on shard 1, but the rest of the statement runs on all shards");
    // (Joined on another column than the key, these are refused by rule 13: each database
    // would null-extend the orders whose items live on the other shard.)
    c.check("SELECT * FROM orders o LEFT JOIN (SELECT * FROM order_items WHERE tenant_id = 3) i ON i.order_id = o.id", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders o LEFT JOIN LATERAL (SELECT * FROM order_items i WHERE i.order_id = o.id AND i.tenant_id = 3) i ON true", &[], "err: but not on their sharding keys");
    c.check("WITH i AS (SELECT * FROM order_items WHERE tenant_id = 3) SELECT * FROM orders o LEFT JOIN i ON i.order_id = o.id", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders o LEFT JOIN (SELECT * FROM order_items WHERE tenant_id = 3) i ON i.order_id = o.id AND i.tenant_id = o.tenant_id", &[], "all");
    c.check("SELECT * FROM orders o LEFT JOIN LATERAL (SELECT * FROM order_items i WHERE i.order_id = o.id AND i.tenant_id = o.tenant_id AND i.tenant_id = 3) i ON true", &[], "all");
    c.check("WITH i AS (SELECT * FROM order_items WHERE tenant_id = 3) SELECT * FROM orders WHERE id IN (SELECT order_id FROM i)", &[], "err: on shard 1, but the rest of the statement runs on all shards");
    c.check("WITH i AS (SELECT tenant_id FROM order_items WHERE tenant_id = 3) SELECT tenant_id FROM i UNION ALL SELECT tenant_id FROM orders", &[], "all");
    c.check("SELECT id FROM orders WHERE tenant_id = 3 EXCEPT SELECT id FROM orders WHERE tenant_id = 1", &[], "1");
    c.check("SELECT id FROM orders WHERE tenant_id = 3 INTERSECT SELECT id FROM orders WHERE tenant_id = 4", &[], "1");
    c.check("SELECT id FROM orders WHERE tenant_id = 3 INTERSECT SELECT id FROM orders WHERE tenant_id = 1", &[], "err: different shards");
    // The levels that do restrict the rows still do.
    c.check("SELECT * FROM orders o LEFT JOIN (SELECT * FROM order_items WHERE tenant_id = 4) i ON i.order_id = o.id WHERE o.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM (SELECT * FROM order_items WHERE tenant_id = 3) i LEFT JOIN orders o ON i.order_id = o.id AND o.tenant_id = i.tenant_id", &[], "1");
    c.check("WITH i AS (SELECT * FROM order_items WHERE tenant_id = 3) SELECT * FROM i JOIN orders o ON o.id = i.order_id AND o.tenant_id = i.tenant_id", &[], "1");
    // (Rule 13: joined on another column, orders' rows would be missed on the other shard.)
    c.check("SELECT * FROM (SELECT * FROM order_items WHERE tenant_id = 3) i LEFT JOIN orders o ON i.order_id = o.id", &[], "err: but not on their sharding keys");
    c.check("WITH i AS (SELECT * FROM order_items WHERE tenant_id = 3) SELECT * FROM i JOIN orders o ON o.id = i.order_id", &[], "err: but not on their sharding keys");
    c.check("SELECT id FROM orders WHERE tenant_id = 3 UNION ALL SELECT id FROM order_items WHERE tenant_id = $1", &[T("4")], "1");
    // An OR-ed set of shards.
    let big = on("big");
    big.check("SELECT * FROM orders WHERE tenant_id = 1 UNION ALL SELECT * FROM orders WHERE tenant_id = 2", &[], "0,2");
    big.check("SELECT * FROM (SELECT * FROM orders WHERE tenant_id = 1 UNION SELECT * FROM orders WHERE tenant_id = 2) o WHERE o.amount > 5", &[], "0,2");
    big.check("INSERT INTO order_items (tenant_id, order_id) SELECT tenant_id, id FROM orders WHERE tenant_id = 1 UNION ALL SELECT tenant_id, id FROM orders WHERE tenant_id = 2", &[], "w 0,2");
}

/// Writes that would leave rows where they do not belong are refused.
#[test]
#[rustfmt::skip]
fn writes_that_would_misplace_rows() {
    let c = prod();
    // Changing a row's sharding key would have to move it to another shard.
    c.check("UPDATE orders SET tenant_id = 4 WHERE tenant_id = 3", &[], "err: this statement sets tenant_id, the sharding key of orders: changing a sharding key would move the row to another shard, which is refused unless [rewrite] has enabled = true");
    c.check("UPDATE orders o SET (amount, tenant_id) = (1, $1) WHERE o.id = 5", &[T("4")], "err: changing a sharding key");
    c.check("UPDATE public.orders SET tenant_id = tenant_id WHERE tenant_id = 3", &[], "err: changing a sharding key");
    c.check("EXPLAIN ANALYZE UPDATE orders SET tenant_id = 4 WHERE tenant_id = 3", &[], "err: changing a sharding key");
    c.check("MERGE INTO orders o USING order_items i ON o.id = i.order_id AND o.tenant_id = 3 WHEN MATCHED THEN UPDATE SET tenant_id = 4", &[], "err: changing a sharding key");
    c.check("MERGE INTO orders o USING order_items i ON o.id = i.order_id AND o.tenant_id = 3 WHEN NOT MATCHED BY SOURCE THEN UPDATE SET tenant_id = 0", &[], "err: changing a sharding key");
    c.check("UPDATE invoices SET customer_id = 4 WHERE customer_id = 3", &[], "err: sets customer_id, the sharding key of invoices");
    c.check("UPDATE foo SET customer_id = 4", &[], "err: changing a sharding key");
    // Other columns, another table's key, an upsert: fine.
    c.check("UPDATE orders SET customer_id = 4, amount = 1 WHERE tenant_id = 3", &[], "w 1");
    c.check("UPDATE orders SET id = 4 WHERE tenant_id = 3", &[], "w 1");
    c.check("UPDATE users SET tenant_id = 4 WHERE id = 42", &[], "w 0");
    c.check("INSERT INTO orders (tenant_id, id) VALUES (3, 1) ON CONFLICT (tenant_id, id) DO UPDATE SET tenant_id = excluded.tenant_id", &[], "w 1");
    c.check("UPDATE events_p3 SET partition_id = 4", &[], "w 1");
    c.check("WITH u AS (UPDATE order_items SET amount = 1 WHERE tenant_id = 3 RETURNING order_id) UPDATE orders SET amount = 2 WHERE tenant_id = 3 AND id IN (SELECT order_id FROM u)", &[], "w 1");
    on("solo").check("UPDATE orders SET tenant_id = 4 WHERE tenant_id = 3", &[], "w 0");
    // A manual shard is the client's own call.
    prod().shard(1).check("UPDATE orders SET tenant_id = 4 WHERE tenant_id = 3", &[], "w 1");
    // An omnisharded table written from sharded rows: each copy would differ.
    c.check("INSERT INTO countries SELECT * FROM orders WHERE tenant_id = 1", &[], "err: this statement writes omnisharded table countries from orders, which is sharded: each database would write from its own rows only and the copies of countries would diverge");
    c.check("INSERT INTO countries (code) SELECT country FROM orders", &[], "err: copies of countries would diverge");
    c.check("INSERT INTO countries (code) SELECT code FROM foo", &[], "err: from foo, which is not in the sharding config");
    c.check("INSERT INTO countries (code) SELECT 'x' FROM events_p3", &[], "err: from events_p3, which is a sharded table family");
    c.check("UPDATE countries c SET n = (SELECT count(*) FROM orders o WHERE o.country = c.code)", &[], "err: copies of countries would diverge");
    c.check("DELETE FROM countries WHERE code NOT IN (SELECT country FROM orders WHERE tenant_id = 3)", &[], "err: copies of countries would diverge");
    c.check("MERGE INTO countries c USING orders o ON c.code = o.country WHEN NOT MATCHED THEN INSERT (code) VALUES (o.country)", &[], "err: copies of countries would diverge");
    // From omnisharded tables or constants: every copy gets the same rows.
    c.check("INSERT INTO countries SELECT * FROM ref.currencies", &[], "w all");
    c.check("INSERT INTO countries (code) SELECT 'fr' WHERE NOT EXISTS (SELECT 1 FROM countries WHERE code = 'fr')", &[], "w all");
    c.check("UPDATE countries c SET name = r.name FROM ref.currencies r WHERE r.code = c.code", &[], "w all");
}

#[test]
#[rustfmt::skip]
fn inserts() {
    let c = prod();
    c.check("INSERT INTO orders (tenant_id, id, amount) VALUES (3, 1, 10)", &[], "w 1");
    c.check("INSERT INTO orders (id, tenant_id) VALUES (1, 42)", &[], "w 0");
    c.check("INSERT INTO orders (tenant_id, id, amount) VALUES ($1, $2, $3)", &[T("3"), T("1"), T("10")], "w 1");
    c.check("INSERT INTO orders (tenant_id, id, amount) VALUES ($1, $2, $3)", &[i8b(42), i8b(1), i8b(10)], "w 0");
    c.check("INSERT INTO orders (tenant_id, id) VALUES ($1::bigint, $2)", &[T("100"), T("1")], "w 1");
    c.check("INSERT INTO orders (tenant_id, id) VALUES (3, 1), (4, 2), (100, 3)", &[], "w 1");
    c.check("INSERT INTO orders (tenant_id, id) VALUES ($1, 1), ($2, 2)", &[T("1"), T("2")], "w 0");
    c.check("INSERT INTO orders (tenant_id, id) VALUES (1, 1), (3, 2)", &[], "err: multi-row INSERT across shards is not supported yet; split it by key");
    c.check("INSERT INTO orders (tenant_id, id) VALUES ($1, 1), ($2, 2)", &[T("1"), T("3")], "err: multi-row INSERT across shards");
    c.check("INSERT INTO orders (tenant_id, id) VALUES (3, 1) RETURNING id", &[], "w 1");
    c.check("INSERT INTO orders (tenant_id, id) VALUES (3, 1) ON CONFLICT DO NOTHING", &[], "w 1");
    c.check("INSERT INTO orders (tenant_id, id, amount) VALUES (3, 1, 5) ON CONFLICT (tenant_id, id) DO UPDATE SET amount = excluded.amount RETURNING *", &[], "w 1");
    c.check("INSERT INTO orders AS o (tenant_id, id) VALUES (3, 1) ON CONFLICT (id) DO UPDATE SET amount = o.amount + 1", &[], "w 1");
    c.check("INSERT INTO public.orders (tenant_id, id) VALUES (42, 1)", &[], "w 0");
    c.check("INSERT INTO order_items (tenant_id, order_id, sku) VALUES ($1, $2, $3)", &[T("3"), T("7"), T("x")], "w 1");
    c.check("INSERT INTO accounts (email, name) VALUES ('acme', 'Acme')", &[], "w 1");
    c.check("INSERT INTO sessions (session_id, user_id) VALUES ($1, 1)", &[bytes(&[0x11; 16])], "w 0");
    c.check("INSERT INTO metrics (device_id, value) VALUES (42, 1.5)", &[], "w 1");
    c.check("INSERT INTO stores (region_id, name) VALUES (3, 'x')", &[], "w 1");
    c.check("INSERT INTO archives (year, body) VALUES (2015, 'x')", &[], "w 1");
    // No usable key: say which column to add.
    c.check("INSERT INTO orders (id, amount) VALUES (1, 2)", &[], "err: INSERT INTO orders gives no value for its sharding key tenant_id");
    c.check("INSERT INTO orders VALUES (3, 1)", &[], "err: add tenant_id to the column list");
    c.check("INSERT INTO orders (tenant_id, id) VALUES (NULL, 1)", &[], "err: sharding key tenant_id");
    c.check("INSERT INTO orders (tenant_id, id) VALUES ($1, 1)", &[N], "err: sharding key tenant_id");
    c.check("INSERT INTO orders (tenant_id, id) VALUES (DEFAULT, 1)", &[], "err: sharding key tenant_id");
    c.check("INSERT INTO orders (tenant_id, id) VALUES (3 + 0, 1)", &[], "err: sharding key tenant_id");
    c.check("INSERT INTO orders DEFAULT VALUES", &[], "err: sharding key tenant_id");
    c.check("INSERT INTO orders (tenant_id, id) SELECT $1, 1", &[T("3")], "err: sharding key tenant_id");
    c.check("INSERT INTO orders (tenant_id, id) SELECT 3, id FROM countries", &[], "err: sharding key tenant_id");
    c.check("INSERT INTO orders (tenant_id, id) SELECT t, 1 FROM unnest($1::bigint[]) t", &[T("{1,2}")], "err: sharding key tenant_id");
    // INSERT ... SELECT from co-located tables: each database copies its own rows.
    c.check("INSERT INTO orders (tenant_id, id) SELECT tenant_id, order_id FROM order_items WHERE tenant_id = 3", &[], "w 1");
    c.check("INSERT INTO orders (tenant_id, id) SELECT tenant_id, order_id FROM order_items", &[], "w all");
    c.check("INSERT INTO orders (tenant_id, id) SELECT tenant_id, order_id FROM order_items WHERE tenant_id IN (1, 3)", &[], "w all");
    c.check("INSERT INTO order_items (tenant_id, order_id) SELECT tenant_id, id FROM orders WHERE id = $1", &[T("5")], "w all");
    c.check("INSERT INTO orders (tenant_id, country) VALUES (3, (SELECT id FROM countries WHERE code = 'fr'))", &[], "w 1");
    c.check("INSERT INTO orders (tenant_id, id) VALUES ($1, $2), ($3, $4) RETURNING id", &[i8b(3), i8b(1), i8b(4), i8b(2)], "w 1");
    c.check("INSERT INTO orders (tenant_id, id) VALUES ($1, $2), ($3, $4)", &[i8b(3), i8b(1), i8b(42), i8b(2)], "err: multi-row INSERT");
    // Omnisharded and column-only tables.
    c.check("INSERT INTO countries (code, name) VALUES ('fr', 'France')", &[], "w all");
    c.check("INSERT INTO countries VALUES ('fr', 'France')", &[], "w all");
    c.check("INSERT INTO countries (code) VALUES ($1) ON CONFLICT DO NOTHING", &[T("fr")], "w all");
    c.check("INSERT INTO invoices (customer_id, total) VALUES (3, 1)", &[], "w 1");
    c.check("INSERT INTO invoices (customer_id, total) VALUES ($1, 1)", &[T("42")], "w 0");
    c.check("INSERT INTO invoices (total) VALUES (1)", &[], "err: invoices: the table is not in the sharding config");
    c.check("INSERT INTO jobs (payload) VALUES ($1)", &[T("x")], "err: list it in [[sharded_tables]] or [[omnisharded_tables]]");
}

#[test]
#[rustfmt::skip]
fn updates_and_deletes() {
    let c = prod();
    c.check("UPDATE orders SET amount = 1 WHERE tenant_id = 3", &[], "w 1");
    c.check("UPDATE orders SET amount = amount + 1 WHERE tenant_id = $1 AND id = $2 RETURNING amount", &[T("42"), T("1")], "w 0");
    c.check("UPDATE orders SET amount = 1", &[], "w all");
    c.check("UPDATE orders SET amount = 1 WHERE id = 5", &[], "w all");
    c.check("UPDATE orders SET amount = 1 WHERE tenant_id IN (1, 3)", &[], "w all");
    c.check("UPDATE orders SET amount = 1 WHERE tenant_id IN (1, 2)", &[], "w 0");
    c.check("UPDATE orders o SET amount = 1 FROM order_items i WHERE i.order_id = o.id AND o.tenant_id = 3", &[], "err: but not on their sharding keys");
    c.check("UPDATE orders o SET amount = 1 FROM order_items i WHERE i.order_id = o.id AND i.tenant_id = o.tenant_id AND o.tenant_id = 3", &[], "w 1");
    c.check("UPDATE orders SET country = c.code FROM countries c WHERE c.name = 'France' AND orders.tenant_id = 3", &[], "w 1");
    c.check("UPDATE orders SET amount = (SELECT max(amount) FROM order_items WHERE tenant_id = 3) WHERE tenant_id = 3", &[], "w 1");
    c.check("DELETE FROM orders WHERE tenant_id = $1 RETURNING id", &[T("42")], "w 0");
    c.check("DELETE FROM orders WHERE tenant_id = $1", &[i8b(3)], "w 1");
    c.check("DELETE FROM orders", &[], "w all");
    c.check("DELETE FROM orders WHERE id = 5", &[], "w all");
    c.check("DELETE FROM orders o USING countries c WHERE c.code = o.country AND o.tenant_id = 3", &[], "w 1");
    c.check("DELETE FROM orders WHERE id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)", &[], "err: on shard 1, but the rest of the statement runs on all shards");
    c.check("WITH d AS (DELETE FROM orders WHERE tenant_id = 3 RETURNING *) SELECT count(*) FROM d", &[], "w 1");
    c.check("UPDATE countries SET name = 'x' WHERE code = 'fr'", &[], "w all");
    c.check("DELETE FROM countries WHERE code = $1", &[T("fr")], "w all");
    c.check("UPDATE foo SET x = 1", &[], "w all");
    c.check("DELETE FROM foo WHERE id = 1", &[], "w all");
    c.check("UPDATE invoices SET total = 0 WHERE customer_id = 3", &[], "w 1");
    c.check("MERGE INTO orders o USING order_items i ON o.id = i.order_id AND o.tenant_id = 3 WHEN MATCHED THEN UPDATE SET amount = 1", &[], "err: but not on their sharding keys");
    c.check("MERGE INTO orders o USING order_items i ON o.id = i.order_id AND o.tenant_id = i.tenant_id AND o.tenant_id = 3 WHEN MATCHED THEN UPDATE SET amount = 1", &[], "w 1");
    c.check("MERGE INTO orders o USING (VALUES (1)) v(id) ON o.id = v.id WHEN MATCHED THEN DELETE", &[], "err: MERGE INTO orders must match exactly one value of its sharding key tenant_id");
}

#[test]
#[rustfmt::skip]
fn locking() {
    let c = prod();
    c.check("SELECT * FROM orders WHERE tenant_id = 3 FOR UPDATE", &[], "w 1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1 FOR NO KEY UPDATE", &[T("42")], "w 0");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 FOR SHARE SKIP LOCKED", &[], "w 1");
    c.check("SELECT * FROM orders ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1", &[], "w all");
    c.check("SELECT * FROM orders o JOIN order_items i ON i.order_id = o.id AND i.tenant_id = o.tenant_id WHERE o.tenant_id = 3 FOR UPDATE OF o", &[], "w 1");
    c.check("SELECT * FROM countries FOR SHARE", &[], "w any");
    c.check("SELECT * FROM queue_p3 ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1", &[], "w 1");
}

#[test]
#[rustfmt::skip]
fn copy_and_ddl() {
    let c = prod();
    c.check("COPY orders FROM STDIN", &[], "err: COPY ... FROM into sharded table orders is not supported yet");
    c.check("COPY orders (tenant_id, id) FROM STDIN WITH (FORMAT csv)", &[], "err: not supported yet");
    c.check("COPY orders TO STDOUT", &[], "all");
    c.check("COPY (SELECT * FROM orders WHERE tenant_id = 3) TO STDOUT", &[], "1");
    c.check("COPY (SELECT * FROM orders) TO STDOUT WITH (FORMAT binary)", &[], "all");
    c.check("CREATE TABLE foo (id int)", &[], "w all");
    c.check("CREATE TABLE orders (tenant_id bigint, id bigint, PRIMARY KEY (tenant_id, id))", &[], "w all");
    c.check("CREATE TABLE IF NOT EXISTS orders_archive (LIKE orders)", &[], "w all");
    c.check("ALTER TABLE orders ADD COLUMN note text", &[], "w all");
    c.check("DROP TABLE orders", &[], "w all");
    c.check("DROP TABLE IF EXISTS orders, order_items CASCADE", &[], "w all");
    c.check("TRUNCATE orders", &[], "w all");
    c.check("CREATE INDEX CONCURRENTLY orders_status ON orders (status)", &[], "w all");
    c.check("CREATE VIEW big_orders AS SELECT * FROM orders WHERE tenant_id = 3", &[], "w all");
    c.check("CREATE TABLE t3 AS SELECT * FROM orders WHERE tenant_id = 3", &[], "w all");
    c.check("COMMENT ON TABLE orders IS 'sharded'", &[], "w all");
    c.check("GRANT SELECT ON orders TO app", &[], "w all");
    c.check("CREATE SCHEMA IF NOT EXISTS app", &[], "w all");
    c.check("CREATE SEQUENCE s", &[], "w all");
    c.check("ALTER TABLE countries ADD COLUMN iso3 text", &[], "w all");
}

#[test]
#[rustfmt::skip]
fn transaction_and_session() {
    let c = prod();
    for sql in [
        "BEGIN",
        "START TRANSACTION",
        "BEGIN ISOLATION LEVEL SERIALIZABLE",
        "COMMIT",
        "END",
        "ROLLBACK",
        "ABORT",
        "SAVEPOINT a",
        "RELEASE SAVEPOINT a",
        "ROLLBACK TO SAVEPOINT a",
        "SET search_path TO public",
        "SET LOCAL statement_timeout = 0",
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
        "RESET ALL",
        "SHOW server_version",
        "DISCARD ALL",
        "SET pgdog.shard = 1",
        "SET pgdog.shard TO 7",
        "RESET pgdog.shard",
        "SET pgdog.sharding_key = 'acme'",
        "RESET pgdog.sharding_key",
    ] {
        c.check(sql, &[], "any");
    }
    c.check("LISTEN orders", &[], "any");
    c.check("NOTIFY orders, 'x'", &[], "any");
    c.check("PREPARE q AS SELECT 1", &[], "any");
    c.check("DO $$ BEGIN PERFORM 1; END $$", &[], "w any");
    c.check("CALL refresh()", &[], "w any");
    c.check("VACUUM orders", &[], "all");
    c.check("ANALYZE countries", &[], "any");
    c.check("EXPLAIN SELECT * FROM orders WHERE tenant_id = 3", &[], "1");
    c.check("EXPLAIN SELECT * FROM orders", &[], "all");
    c.check("EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM orders WHERE tenant_id = $1", &[T("42")], "0");
    c.check("EXPLAIN ANALYZE UPDATE orders SET amount = 1 WHERE tenant_id = 3", &[], "w 1");
    c.check("EXPLAIN SELECT 1", &[], "any");
    c.check("EXPLAIN SELECT * FROM countries", &[], "any");
}

#[test]
#[rustfmt::skip]
fn statement_strings() {
    let c = prod();
    c.check("BEGIN; UPDATE orders SET amount = 1 WHERE tenant_id = 3; COMMIT", &[], "w 1");
    c.check("BEGIN; SELECT * FROM orders WHERE tenant_id = 42; COMMIT", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = 3; SELECT * FROM order_items WHERE tenant_id = 4", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 1; SELECT * FROM orders WHERE tenant_id = 3", &[], "err: the statements of this query string go to different shards (shard 0, then shard 1)");
    c.check("SELECT 1; SELECT 2", &[], "any");
    c.check("SET statement_timeout = 0; SELECT * FROM orders WHERE tenant_id = 3", &[], "1");
    c.check("SELECT * FROM countries; SELECT * FROM orders WHERE tenant_id = 3", &[], "1");
    c.check("UPDATE countries SET name = 'x'; SELECT * FROM orders WHERE tenant_id = 3", &[], "w all");
    c.check("SELECT * FROM orders; SELECT * FROM countries", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = 3; SELECT count(*) FROM orders", &[], "all");
    c.check("INSERT INTO orders (tenant_id) VALUES (3); INSERT INTO order_items (tenant_id) VALUES (4)", &[], "w 1");
    c.check("INSERT INTO orders (tenant_id) VALUES (3); INSERT INTO order_items (tenant_id) VALUES (1)", &[], "err: different shards");
    // An INSERT must run on its shard only, never on the other statement's too.
    c.check("INSERT INTO orders (tenant_id) VALUES (3); SELECT count(*) FROM orders", &[], "err: different shards (shard 1, then all shards)");
    c.check("SELECT * FROM events_p3; SELECT * FROM orders", &[], "err: different shards");
    c.check("INSERT INTO orders (tenant_id) VALUES (3); SELECT * FROM countries", &[], "w 1");
}
