//! Subqueries inside expressions (rule 12): a sublink that reads sharded tables runs where the
//! statement runs, over that database's rows only, so it must be correlated on a co-located
//! sharding key, or find all its rows on the one database the statement runs on; otherwise the
//! statement is refused. `users` and `orders` are co-located (bigint keys, same hash and count).

use super::*;

/// The two statements of issue 18, which returned rows from one shard only.
#[test]
#[rustfmt::skip]
fn issue_18() {
    let c = prod();
    // Keyless outer query, keyed scalar subquery: each shard compared grp with the subquery's
    // value on its own rows, and every shard but one found no user 1664081458 (NULL).
    c.check("SELECT id FROM users WHERE grp = (SELECT grp FROM users WHERE id = 1664081458) AND score > 921", &[], "err: a subquery reads users, which is sharded, on shard");
    c.check("SELECT id FROM users WHERE grp = (SELECT grp FROM users WHERE id = 1664081458) AND score > 921", &[], "err: but the rest of the statement runs on all shards: pgshard cannot combine query levels routed to different shards");
    c.check("SELECT id FROM users WHERE grp = (SELECT grp FROM users WHERE id = $1) AND score > $2", &[T("1664081458"), T("921")], "err: but the rest of the statement runs on all shards");
    // Keyed outer query, keyless subquery: the average was over one shard's users.
    c.check("SELECT id, score FROM users WHERE id = 736124275 AND score >= (SELECT avg(score) FROM users WHERE grp = 8)", &[], "err: a subquery reads users, which is sharded, without its sharding key: each database would run it over its own rows only, and pgshard cannot combine query levels across shards");
    c.check("SELECT id, score FROM users WHERE id = $1 AND score >= (SELECT avg(score) FROM users WHERE grp = $2)", &[T("736124275"), T("8")], "err: without its sharding key");
    // What is exact: both levels on the same shard, or the subquery correlated on the key.
    c.check("SELECT id FROM users WHERE id = 3 AND grp = (SELECT grp FROM users WHERE id = 4)", &[], "1");
    c.check("SELECT id FROM users WHERE id = $1 AND grp = (SELECT grp FROM users WHERE id = $1)", &[T("42")], "0");
    c.check("SELECT id FROM users WHERE id = $1 AND grp = (SELECT grp FROM users WHERE id = $2)", &[T("42"), T("3")], "err: on shard 1, but the rest of the statement runs on shard 0");
    c.check("SELECT id FROM users u WHERE score >= (SELECT avg(score) FROM users v WHERE v.id = u.id)", &[], "all");
    // Overrides and one-database clusters decide first (rules 2 and 3).
    prod().shard(1).check("SELECT id FROM users WHERE grp = (SELECT grp FROM users WHERE id = 1664081458) AND score > 921", &[], "1");
    on("solo").check("SELECT id FROM users WHERE grp = (SELECT grp FROM users WHERE id = 1664081458) AND score > 921", &[], "0");
    on("solo").check("SELECT id, score FROM users WHERE id = 736124275 AND score >= (SELECT avg(score) FROM users WHERE grp = 8)", &[], "0");
}

/// A sublink whose rows all live on one database places the statement there.
#[test]
#[rustfmt::skip]
fn keyed_sublinks() {
    let c = prod();
    // No sharded table outside the sublink: the statement goes where the sublink's rows are.
    c.check("SELECT EXISTS (SELECT 1 FROM users WHERE id = 42)", &[], "0");
    c.check("SELECT (SELECT count(*) FROM orders WHERE tenant_id = $1)", &[T("3")], "1");
    c.check("SELECT ARRAY(SELECT id FROM users WHERE id = 3)", &[], "1");
    c.check("SELECT * FROM countries WHERE code IN (SELECT country FROM orders WHERE tenant_id = 42)", &[], "0");
    c.check("SELECT (SELECT name FROM users WHERE id = 3), (SELECT count(*) FROM orders WHERE tenant_id = 4)", &[], "1");
    c.check("SELECT (SELECT name FROM users WHERE id = 1), (SELECT count(*) FROM orders WHERE tenant_id = 3)", &[], "err: a subquery reads");
    c.check("SELECT (SELECT name FROM users WHERE id = 1), (SELECT count(*) FROM orders WHERE tenant_id = 3)", &[], "err: which another subquery reads");
    c.check("SELECT (SELECT count(*) FROM users WHERE id IN (1, 3))", &[], "err: a subquery reads users, which is sharded, on shards 0, 1, but the rest of the statement runs on each shard separately");
    // Keyed outer query: the same database, or an error.
    c.check("SELECT * FROM orders WHERE tenant_id = 3 AND amount > (SELECT avg(amount) FROM order_items WHERE tenant_id = 3)", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id IN (3, 4) AND amount > (SELECT avg(amount) FROM order_items WHERE tenant_id = 5)", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = $2)", &[T("3"), T("4")], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = $2)", &[T("3"), T("42")], "err: on shard 0, but the rest of the statement runs on shard 1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = $2)", &[T("3"), N], "err: without its sharding key");
    c.check("SELECT * FROM orders WHERE tenant_id = 1 AND tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)", &[], "1");
    // A sublink that matches no row reads nothing wherever it runs.
    c.check("SELECT * FROM orders WHERE id IN (SELECT order_id FROM order_items WHERE tenant_id = 1 AND tenant_id = 3)", &[], "all");
    // Writes.
    c.check("UPDATE orders SET amount = (SELECT max(amount) FROM order_items WHERE tenant_id = $1) WHERE tenant_id = $1", &[T("42")], "w 0");
    c.check("DELETE FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)", &[], "w 1");
    c.check("INSERT INTO orders (tenant_id, amount) VALUES (3, (SELECT max(amount) FROM order_items WHERE tenant_id = 3))", &[], "w 1");
    c.check("INSERT INTO orders (tenant_id, amount) VALUES (42, (SELECT max(amount) FROM order_items WHERE tenant_id = 3))", &[], "err: on shard 1, but the rest of the statement runs on shard 0");
    c.check("INSERT INTO orders (tenant_id, amount) VALUES (3, (SELECT max(amount) FROM order_items))", &[], "err: a subquery reads order_items, which is sharded, without its sharding key");
    // A VALUES row's sublink is not an INSERT ... SELECT: the rows still need their key.
    c.check("INSERT INTO orders (id) VALUES ((SELECT max(order_id) FROM order_items WHERE tenant_id = 3))", &[], "err: INSERT INTO orders gives no value for its sharding key tenant_id");
    c.check("INSERT INTO orders (tenant_id, id) VALUES (1, (SELECT 1 FROM countries)), (3, 2)", &[], "err: multi-row INSERT across shards");
    // Family tables live on one database.
    c.check("SELECT * FROM events_p3 WHERE id IN (SELECT id FROM events_p4)", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT id FROM events_p3)", &[], "1");
    c.check("SELECT * FROM orders WHERE id IN (SELECT id FROM events_p3)", &[], "err: a subquery reads events_p3, which is a sharded table family, on shard 1, but the rest of the statement runs on all shards");
    c.check("SELECT (SELECT max(\"offset\") FROM events_p42)", &[], "0");
    // Through the statement's CTEs and FROM subqueries.
    c.check("WITH i AS (SELECT * FROM order_items WHERE tenant_id = 3) SELECT * FROM countries WHERE code IN (SELECT country FROM i)", &[], "err: on shard 1, but the rest of the statement runs on all shards");
    c.check("WITH i AS (SELECT * FROM order_items WHERE tenant_id = 3) SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM i)", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM (SELECT * FROM order_items WHERE tenant_id = 3) i)", &[], "1");
    c.check("SELECT * FROM (SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)) s", &[], "1");
    c.check("SELECT * FROM (SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 1)) s", &[], "err: on shard 0, but the rest of the statement runs on shard 1");
    // cross_shard_disabled refuses fan-outs as before; a placed statement is on one shard.
    let strict = on("strict");
    strict.check("SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)", &[], "1");
    strict.check("SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id)", &[], "err: cross-shard queries are disabled");
}

/// Correlated on a co-located sharding key, a sublink meets on each database the partners of
/// that database's rows: exact wherever the statement runs.
#[test]
#[rustfmt::skip]
fn correlated_sublinks() {
    let c = prod();
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id)", &[], "all");
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE u.id = o.tenant_id AND o.amount > 5)", &[], "all");
    c.check("SELECT * FROM users u WHERE NOT EXISTS (SELECT 1 FROM orders WHERE tenant_id = u.id)", &[], "all");
    c.check("SELECT * FROM users WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = users.id)", &[], "all");
    c.check("SELECT u.id, (SELECT count(*) FROM orders o WHERE o.tenant_id = u.id) FROM users u", &[], "all");
    c.check("SELECT u.id, (SELECT sum(i.amount) FROM orders o JOIN order_items i ON i.tenant_id = o.tenant_id AND i.order_id = o.id WHERE o.tenant_id = u.id) FROM users u", &[], "all");
    c.check("SELECT * FROM users u WHERE u.id = $1 AND u.score > (SELECT avg(amount) FROM orders o WHERE o.tenant_id = u.id)", &[T("3")], "1");
    c.check("SELECT * FROM orders o WHERE o.tenant_id IN (1, 3) AND o.amount > ALL (SELECT amount FROM order_items i WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id)", &[], "all");
    c.check("SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id WHERE o.id IN (SELECT order_id FROM order_items i WHERE i.tenant_id = o.tenant_id)", &[], "all");
    c.check("SELECT * FROM invoices v WHERE EXISTS (SELECT 1 FROM payments p WHERE p.customer_id = v.customer_id)", &[], "all");
    c.check("UPDATE orders o SET amount = (SELECT sum(amount) FROM order_items i WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id)", &[], "w all");
    c.check("DELETE FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id)", &[], "w all");
    c.check("INSERT INTO order_items (tenant_id, order_id) SELECT tenant_id, id FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id)", &[], "w all");
    // Nested: each sublink is checked on its own, against the level it is correlated with.
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id AND EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id))", &[], "all");
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id AND o.id IN (SELECT order_id FROM order_items))", &[], "err: a subquery reads order_items, which is sharded, without its sharding key");
    c.check("SELECT * FROM countries c WHERE c.code IN (SELECT country FROM orders o WHERE o.tenant_id = 3 AND EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id))", &[], "1");
    // Not correlations: another column, another key space, another level, or a name that may
    // not be a table.
    c.check("SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id)", &[], "err: a subquery reads order_items, which is sharded, without its sharding key");
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.grp)", &[], "err: without its sharding key");
    c.check("SELECT * FROM accounts a WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = a.email)", &[], "err: without its sharding key");
    c.check("SELECT * FROM stores s WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = s.region_id)", &[], "err: without its sharding key");
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id OR o.amount > 5)", &[], "err: without its sharding key");
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM countries c LEFT JOIN orders o ON o.tenant_id = u.id)", &[], "err: without its sharding key");
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id UNION ALL SELECT 1 FROM orders)", &[], "err: without its sharding key");
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o, users u WHERE o.tenant_id = u.id)", &[], "err: without its sharding key");
    c.check("SELECT * FROM (SELECT id + 1 AS id FROM users) u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id)", &[], "err: without its sharding key");
    c.check("SELECT * FROM users x, (SELECT id + 1 AS id FROM users) u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id)", &[], "err: without its sharding key");
    c.check("SELECT * FROM users u, coalesce(1) WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id)", &[], "err: without its sharding key");
    c.check("SELECT * FROM users u, generate_series(1, 2) WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id)", &[], "all");
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM (SELECT tenant_id FROM orders) o WHERE o.tenant_id = u.id)", &[], "err: without its sharding key");
    c.check("WITH o AS (SELECT * FROM orders) SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM o WHERE o.tenant_id = u.id)", &[], "err: without its sharding key");
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE tenant_id = id)", &[], "err: without its sharding key");
    c.check("SELECT * FROM countries c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = c.id)", &[], "err: without its sharding key");
}

/// Keyless outer and inner levels: each database would see its own part of the inner rows.
#[test]
#[rustfmt::skip]
fn keyless_sublinks() {
    let c = prod();
    c.check("SELECT * FROM users WHERE grp IN (SELECT grp FROM users WHERE score > 5)", &[], "err: a subquery reads users, which is sharded, without its sharding key");
    c.check("SELECT * FROM orders WHERE amount > (SELECT avg(amount) FROM orders)", &[], "err: without its sharding key");
    c.check("SELECT * FROM countries WHERE code IN (SELECT country FROM orders)", &[], "err: a subquery reads orders, which is sharded, without its sharding key");
    c.check("SELECT * FROM foo WHERE x IN (SELECT x FROM bar)", &[], "err: a subquery reads bar, which is not in the sharding config (so is treated as sharded), without its sharding key");
    c.check("SELECT * FROM orders o JOIN order_items i ON i.tenant_id = o.tenant_id AND i.amount > (SELECT avg(amount) FROM order_items)", &[], "err: without its sharding key");
    c.check("SELECT tenant_id, count(*) FROM orders GROUP BY tenant_id HAVING count(*) > (SELECT count(*) FROM users)", &[], "err: a subquery reads users");
    c.check("SELECT * FROM orders ORDER BY (SELECT max(id) FROM users)", &[], "err: a subquery reads users");
    c.check("UPDATE orders SET amount = (SELECT avg(amount) FROM order_items) WHERE tenant_id = 3", &[], "err: a subquery reads order_items");
    c.check("DELETE FROM orders WHERE id NOT IN (SELECT order_id FROM order_items)", &[], "err: a subquery reads order_items");
    c.check("WITH t AS (SELECT id FROM users) SELECT * FROM countries WHERE code IN (SELECT id FROM t)", &[], "err: a subquery reads users");
    c.check("EXPLAIN SELECT * FROM users WHERE grp IN (SELECT grp FROM users)", &[], "err: a subquery reads users");
    c.check("COPY (SELECT * FROM users WHERE grp IN (SELECT grp FROM users)) TO STDOUT", &[], "err: a subquery reads users");
    // Omnisharded, catalog and table-free sublinks are the same on every database.
    c.check("SELECT * FROM orders WHERE country IN (SELECT code FROM countries WHERE name LIKE 'F%')", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 AND country IN (SELECT code FROM ref.currencies)", &[], "1");
    c.check("SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relname = 'orders')", &[], "all");
    c.check("SELECT * FROM orders WHERE id = (SELECT 1)", &[], "all");
    c.check("SELECT (SELECT 1), (SELECT code FROM countries LIMIT 1)", &[], "any");
    c.check("INSERT INTO orders (tenant_id, country) VALUES ($1, (SELECT code FROM countries WHERE name = $2))", &[T("3"), T("France")], "w 1");
    c.check("WITH c AS (SELECT * FROM countries) SELECT * FROM orders WHERE tenant_id = 3 AND country IN (SELECT code FROM c)", &[], "1");
    // Schema changes keep their routing: a view's sublink runs later, where the view is read.
    c.check("CREATE VIEW big_orders AS SELECT * FROM orders WHERE amount > (SELECT avg(amount) FROM orders)", &[], "w all");
}
