//! Statements that write one table from another's rows, and data-modifying
//! WITH queries (rule 11): an omnisharded table is written only from rows
//! every database holds; a statement runs wherever the rows its parts write
//! are, and exactly where an INSERT's rows belong, or is refused.

use super::*;

#[test]
#[rustfmt::skip]
fn omnisharded_tables_are_written_from_copies_only() {
    let c = prod();
    let diverge = "err: copies of countries would diverge";
    c.check("UPDATE countries c SET name = o.item FROM orders o WHERE o.country = c.code", &[], diverge);
    c.check("DELETE FROM countries c USING orders o WHERE o.country = c.code", &[], diverge);
    c.check("MERGE INTO countries c USING orders o ON c.code = o.country WHEN MATCHED THEN DELETE", &[], diverge);
    c.check("INSERT INTO countries (code, name) VALUES ((SELECT max(country) FROM orders), 'x')", &[], diverge);
    c.check("UPDATE countries SET name = (SELECT max(item) FROM orders WHERE tenant_id = 3)", &[], diverge);
    c.check("INSERT INTO countries (code, name) VALUES ('fr', 'x') ON CONFLICT (code) DO UPDATE SET name = (SELECT max(item) FROM orders)", &[], diverge);
    c.check("INSERT INTO countries (code, name) SELECT country, 'x' FROM orders WHERE tenant_id = 3", &[], diverge);
    c.check("WITH d AS (DELETE FROM orders WHERE tenant_id = 3 RETURNING *) UPDATE countries SET name = 'x'", &[], diverge);
    // In a data-modifying WITH query.
    let with = "err: this statement writes omnisharded table countries in a data-modifying WITH query and reads orders, which is sharded";
    c.check("WITH x AS (INSERT INTO countries (code) SELECT country FROM orders RETURNING *) SELECT 1", &[], with);
    c.check("WITH x AS (UPDATE countries SET name = 'x' RETURNING *) SELECT * FROM orders WHERE tenant_id = 3", &[], with);
    c.check("WITH x AS (DELETE FROM countries RETURNING *) INSERT INTO orders (tenant_id, id) VALUES (3, 1)", &[], with);
    c.check("WITH x AS (INSERT INTO countries (code) VALUES ((SELECT max(country) FROM orders))) SELECT 1", &[], with);
    // From copies: every copy gets the same rows.
    c.check("WITH x AS (DELETE FROM countries WHERE code = 'fr' RETURNING *) SELECT * FROM x", &[], "w all");
    c.check("INSERT INTO countries (code, name) SELECT code, name FROM ref.currencies", &[], "w all");
}

#[test]
#[rustfmt::skip]
fn data_modifying_ctes_run_wherever_their_rows_are() {
    let c = prod();
    // Their own keys: a DELETE or UPDATE runs on the shards its rows may be on.
    c.check("WITH d AS (DELETE FROM orders WHERE tenant_id = 3 RETURNING *) SELECT * FROM d", &[], "w 1");
    c.check("WITH d AS (DELETE FROM orders WHERE tenant_id = $1 RETURNING *) SELECT * FROM d", &[T("1")], "w 0");
    c.check("WITH d AS (DELETE FROM orders WHERE tenant_id = 3 RETURNING *) SELECT count(*) FROM orders", &[], "w all");
    c.check("WITH d AS (DELETE FROM orders WHERE amount > 5 RETURNING *) SELECT * FROM orders WHERE tenant_id = 3", &[], "w all");
    c.check("WITH d AS (DELETE FROM orders WHERE amount > 5) SELECT 1", &[], "w all");
    c.check("WITH d AS (DELETE FROM orders WHERE tenant_id = 3) DELETE FROM order_items WHERE tenant_id = 4", &[], "w 1");
    c.check("WITH d AS (DELETE FROM orders WHERE tenant_id = 3) DELETE FROM order_items WHERE tenant_id = 1", &[], "w all");
    c.check("WITH u AS (UPDATE orders SET amount = 1 WHERE tenant_id = $1 RETURNING *) SELECT * FROM u", &[T("3")], "w 1");
    // An INSERT's rows go to their shard only: the rest must run there.
    c.check("WITH i AS (INSERT INTO orders (tenant_id, id) VALUES (3, 1) RETURNING *) SELECT * FROM i", &[], "w 1");
    c.check("WITH i AS (INSERT INTO orders (tenant_id, id) VALUES ($1, 1) RETURNING *) SELECT * FROM i", &[T("1")], "w 0");
    c.check("WITH i AS (INSERT INTO orders (tenant_id, id) VALUES (3, 1), (4, 2) RETURNING *) SELECT * FROM i", &[], "w 1");
    c.check("WITH i AS (INSERT INTO orders (tenant_id, id) VALUES (3, 1) RETURNING *) INSERT INTO order_items (tenant_id, order_id) SELECT tenant_id, id FROM i", &[], "w 1");
    c.check("WITH i AS (INSERT INTO orders (tenant_id, id) VALUES (3, 1) RETURNING *) SELECT count(*) FROM orders", &[], "err: a data-modifying WITH query writes orders on shard 1, but the rest of the statement must run on all shards");
    c.check("WITH i AS (INSERT INTO orders (tenant_id, id) VALUES (3, 1)) DELETE FROM order_items WHERE tenant_id = 1", &[], "err: the rest of the statement must run on shard 0");
    c.check("WITH i AS (INSERT INTO orders (tenant_id, id) VALUES (3, 1)), j AS (INSERT INTO order_items (tenant_id, order_id) VALUES (1, 1)) SELECT 1", &[], "err: a data-modifying WITH query writes");
    let without_key = "err: a data-modifying WITH query writes orders, which is sharded, but its rows' sharding key does not put them on one shard";
    c.check("WITH i AS (INSERT INTO orders (id) VALUES (1) RETURNING *) SELECT * FROM i", &[], without_key);
    c.check("WITH i AS (INSERT INTO orders VALUES (3, 1) RETURNING *) SELECT * FROM i", &[], without_key);
    c.check("WITH i AS (INSERT INTO orders (tenant_id, id) VALUES (1, 1), (3, 2) RETURNING *) SELECT * FROM i", &[], without_key);
    c.check("WITH i AS (INSERT INTO orders (tenant_id, id) SELECT tenant_id, id FROM order_items) SELECT 1", &[], without_key);
    c.check("WITH i AS (INSERT INTO orders (tenant_id, id) VALUES (3, 1)) SELECT 1", &[], "err: the rest of the statement must run on all shards");
    // Key changes in a WITH query are refused as at the top.
    c.check("WITH u AS (UPDATE orders SET tenant_id = 4 WHERE tenant_id = 3 RETURNING *) SELECT * FROM u", &[], "err: this statement sets tenant_id, the sharding key of orders");
    // Family members pin the statement to their database.
    c.check("WITH d AS (DELETE FROM events_p3 RETURNING *) SELECT * FROM d", &[], "w 1");
}
