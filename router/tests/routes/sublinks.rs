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

/// TPC-H Q4's shape: an EXISTS correlated on the key with the outer column
/// unqualified. Postgres resolves an unqualified column at the innermost
/// level with an item that has it, so the catalog's columns tell which
/// table it is; without a catalog, or with a table it does not know, it
/// stays refused.
#[test]
#[rustfmt::skip]
fn unqualified_outer_columns_through_the_catalog() {
    let q4 = "SELECT o_orderpriority, count(*) FROM torders WHERE o_orderdate >= DATE '1993-07-01' AND EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate) GROUP BY o_orderpriority";
    let c = on("cat");
    c.check(q4, &[], "all");
    c.check("SELECT * FROM torders WHERE EXISTS (SELECT 1 FROM lineitem WHERE o_orderkey = lineitem.l_orderkey)", &[], "all");
    c.check("SELECT * FROM torders WHERE o_orderkey = 3 AND EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey)", &[], "1");
    c.check("SELECT * FROM torders JOIN customer ON c_custkey = o_custkey WHERE EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey)", &[], "all");
    c.check("SELECT * FROM torders WHERE EXISTS (SELECT 1 FROM customer WHERE c_custkey = o_custkey AND EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey))", &[], "all");
    // users.id and orders.tenant_id are co-located keys (bigint, one placement).
    c.check("SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM users WHERE users.id = tenant_id)", &[], "all");
    c.check("SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM users WHERE users.id = amount)", &[], "err: without its sharding key");
    // Without a catalog: refused as before.
    prod().check(q4, &[], "err: a subquery reads lineitem, which is sharded, without its sharding key");
    // Refusals that stay: the column is not the outer table's key, not any
    // table's, or the sublink's own table has it (then it is no outer column).
    c.check("SELECT * FROM torders WHERE EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_custkey)", &[], "err: without its sharding key");
    c.check("SELECT * FROM torders WHERE EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_nothing)", &[], "err: without its sharding key");
    c.check("SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM order_items WHERE order_items.tenant_id = tenant_id)", &[], "err: without its sharding key");
    // A table the catalog does not know could have the column.
    c.check("SELECT * FROM torders, countries WHERE EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey)", &[], "err: without its sharding key");
    c.check("SELECT * FROM torders WHERE EXISTS (SELECT 1 FROM lineitem, countries WHERE l_orderkey = o_orderkey)", &[], "err: without its sharding key");
    // Any FROM item that is not a table could have it too.
    c.check("SELECT * FROM torders, (SELECT 1 AS x) s WHERE EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey)", &[], "err: without its sharding key");
    c.check("SELECT * FROM torders WHERE EXISTS (SELECT 1 FROM lineitem, (SELECT 1 AS o_orderkey) s WHERE l_orderkey = o_orderkey)", &[], "err: without its sharding key");
    c.check("SELECT * FROM torders WHERE EXISTS (SELECT 1 FROM lineitem, generate_series(1, 2) o_orderkey WHERE l_orderkey = o_orderkey)", &[], "err: without its sharding key");
    c.check("WITH t AS (SELECT 1 AS o_orderkey) SELECT * FROM torders, t WHERE EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey)", &[], "err: without its sharding key");
    c.check("WITH t AS (SELECT 1 AS o_orderkey) SELECT * FROM torders WHERE EXISTS (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey)", &[], "all");
    c.check("SELECT * FROM torders WHERE EXISTS (SELECT 1 FROM lineitem, (SELECT 1) WHERE l_orderkey = o_orderkey)", &[], "err: without its sharding key");
}

/// TPC-H Q18's shape: `key IN (SELECT key FROM ... GROUP BY key ...)` AND-ed
/// into WHERE compares each outer row only with inner rows of its own key
/// (on its own database), whole groups of them: correlated on the key.
#[test]
#[rustfmt::skip]
fn in_sublinks_on_the_key() {
    let q18 = "SELECT c_name, o_orderkey, sum(l_quantity) FROM customer, torders, lineitem WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 300) AND c_custkey = o_custkey AND o_orderkey = l_orderkey GROUP BY c_name, o_orderkey";
    let c = on("cat");
    c.check(q18, &[], "all");
    c.check("SELECT * FROM torders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem WHERE l_quantity > 5)", &[], "all");
    c.check("SELECT * FROM torders WHERE o_orderkey = ANY (SELECT l_orderkey FROM lineitem)", &[], "all");
    c.check("SELECT * FROM torders WHERE o_orderkey IN (SELECT DISTINCT l_orderkey FROM lineitem)", &[], "all");
    c.check("SELECT * FROM torders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_partkey, l_orderkey)", &[], "all");
    c.check("SELECT * FROM torders WHERE o_totalprice > 5 AND (o_orderkey IN (SELECT l_orderkey FROM lineitem) AND o_custkey = 3)", &[], "all");
    c.check("SELECT * FROM torders WHERE o_orderkey = 3 AND o_orderkey IN (SELECT l_orderkey FROM lineitem)", &[], "1");
    // The left side is read around the sublink: a column of the sublink's
    // own tables does not hide it.
    c.check("SELECT * FROM users WHERE id IN (SELECT tenant_id FROM orders WHERE amount > 3)", &[], "all");
    c.check("SELECT * FROM users u WHERE id IN (SELECT tenant_id FROM orders GROUP BY tenant_id HAVING count(*) > 2)", &[], "all");
    c.check("SELECT * FROM users WHERE id IN (SELECT id FROM orders)", &[], "err: without its sharding key");
    c.check("SELECT * FROM users WHERE amount IN (SELECT tenant_id FROM orders)", &[], "err: without its sharding key");
    // Qualified, no catalog needed.
    prod().check("SELECT * FROM orders o WHERE o.tenant_id IN (SELECT tenant_id FROM order_items GROUP BY tenant_id HAVING count(*) > 2)", &[], "all");
    prod().check("SELECT * FROM orders o WHERE o.tenant_id IN (SELECT i.tenant_id FROM order_items i)", &[], "all");
    prod().check(q18, &[], "err: without its sharding key");
    prod().check("SELECT * FROM users WHERE id IN (SELECT tenant_id FROM orders)", &[], "err: without its sharding key");
    prod().check("SELECT * FROM users WHERE users.id IN (SELECT tenant_id FROM orders)", &[], "all");
    // Refusals that stay: rows of other keys decide (LIMIT, OFFSET, DISTINCT
    // ON, an aggregate over all rows, grouping sets), not the key, not AND-ed
    // into WHERE (NOT IN sees a NULL on another database), a set operation.
    for sql in [
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey ORDER BY sum(l_quantity) DESC LIMIT 10)",
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem OFFSET 1)",
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT DISTINCT ON (l_partkey) l_orderkey FROM lineitem ORDER BY l_partkey)",
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT max(l_orderkey) FROM lineitem)",
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem HAVING count(*) > 1)",
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY ROLLUP (l_orderkey))",
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_partkey)",
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem WINDOW w AS (ORDER BY l_partkey))",
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT l_partkey FROM lineitem)",
        "SELECT * FROM torders WHERE o_custkey IN (SELECT l_orderkey FROM lineitem)",
        "SELECT * FROM torders WHERE o_orderkey NOT IN (SELECT l_orderkey FROM lineitem)",
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem) OR o_totalprice > 5",
        "SELECT * FROM torders WHERE NOT (o_orderkey IN (SELECT l_orderkey FROM lineitem))",
        "SELECT * FROM torders WHERE o_orderkey <> ALL (SELECT l_orderkey FROM lineitem)",
        "SELECT * FROM torders WHERE o_orderkey < ANY (SELECT l_orderkey FROM lineitem)",
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem UNION SELECT l_orderkey FROM lineitem)",
        "SELECT * FROM torders WHERE o_orderkey + 0 IN (SELECT l_orderkey FROM lineitem)",
        "SELECT * FROM torders WHERE o_orderkey IN (SELECT l_orderkey + 0 FROM lineitem)",
        "SELECT o_orderkey IN (SELECT l_orderkey FROM lineitem) FROM torders",
        "SELECT * FROM torders JOIN customer ON c_custkey = o_custkey AND o_orderkey IN (SELECT l_orderkey FROM lineitem)",
    ] {
        c.check(sql, &[], "err: without its sharding key");
    }
}
