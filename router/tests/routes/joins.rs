//! Joins (rule 13): each database joins the rows it holds, so a level that joins sharded tables
//! must pair only rows that live on one database: its items connected by equalities between
//! co-located sharding keys, or every part of it restricted to the same shard. `users` (id),
//! `orders` and `order_items` (tenant_id) and `counters` (partition_id) are co-located: bigint
//! keys, the same hash, the same shard count. Keys on `prod`: 1 -> 0, 2 -> 0, 3 -> 1, 4 -> 1,
//! 5 -> 1, 42 -> 0.

use super::*;

/// The two statements of issue 18 that returned pairs from one shard only, and what is exact.
#[test]
#[rustfmt::skip]
fn issue_18() {
    let c = prod();
    c.check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.score > 34", &[], "err: this statement joins users u, which is sharded, with orders o, which is sharded, but not on their sharding keys: each database would join only the rows it holds, and pairs whose rows live on different shards would be missed");
    c.check("SELECT u.id, v.id FROM users u JOIN users v ON u.grp = v.grp AND u.score = v.score AND u.id < v.id", &[], "err: this statement joins users u, which is sharded, with users v, which is sharded, but not on their sharding keys");
    c.check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.score > $1", &[T("34")], "err: join them with an equality between their co-located sharding keys");
    // On the keys: each database meets the partners of its own rows.
    c.check("SELECT u.id, o.id FROM users u JOIN orders o ON o.tenant_id = u.id", &[], "all");
    c.check("SELECT u.id, v.id FROM users u JOIN users v ON u.id = v.id AND u.grp = v.grp", &[], "all");
    // Both restricted to the same shard by their keys: the whole join is there.
    c.check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id = 5 AND o.tenant_id = 5", &[], "1");
    c.check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id = $1 AND o.tenant_id = $2", &[T("5"), T("3")], "1");
    c.check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id = $1 AND o.tenant_id = $2", &[T("5"), T("42")], "err: different shards");
    c.check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id = $1 AND o.tenant_id = $2", &[T("5"), N], "err: but not on their sharding keys");
    c.check("SELECT u.id, v.id FROM users u JOIN users v ON u.grp = v.grp WHERE u.id = 3 AND v.id = 4", &[], "1");
    // One side keyed is not enough: the other side's rows on other shards would be missed.
    c.check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id = 5", &[], "err: with orders o, which is sharded, but not on their sharding keys");
    c.check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id IN (1, 3) AND o.tenant_id IN (1, 3)", &[], "err: but not on their sharding keys");
    // No row matches anywhere: nothing to miss.
    c.check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id = 1 AND u.id = 3", &[], "0");
    // Overrides and one-database clusters decide first (rules 2 and 3).
    prod().shard(1).check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty", &[], "1");
    prod().key("5").check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty", &[], "1");
    on("solo").check("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty", &[], "0");
    on("solo").check("SELECT u.id, v.id FROM users u JOIN users v ON u.grp = v.grp AND u.score = v.score AND u.id < v.id", &[], "0");
}

/// Equalities connect items in WHERE and inner joins' ON, transitively.
#[test]
#[rustfmt::skip]
fn inner_joins() {
    let c = prod();
    c.check("SELECT * FROM users u, orders o WHERE o.tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM users u CROSS JOIN orders o WHERE u.id = o.tenant_id AND o.amount > 3", &[], "all");
    c.check("SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id JOIN order_items i ON i.tenant_id = o.tenant_id", &[], "all");
    c.check("SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id JOIN order_items i ON i.tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM users u, orders o, order_items i WHERE u.id = o.tenant_id AND o.tenant_id = i.tenant_id", &[], "all");
    c.check("SELECT * FROM users u, orders o, order_items i, counters k WHERE u.id = o.tenant_id AND i.tenant_id = k.partition_id AND k.partition_id = o.tenant_id", &[], "all");
    c.check("SELECT * FROM users u, orders o, order_items i WHERE u.id = o.tenant_id AND o.id = i.order_id", &[], "err: joins users u, which is sharded, with order_items i, which is sharded");
    c.check("SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id AND o.amount > 3 WHERE u.score > 1", &[], "all");
    c.check("SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id OR o.amount > 3", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM users u JOIN orders o ON NOT (o.tenant_id <> u.id)", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders o JOIN users u ON true WHERE o.id = 3", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id WHERE u.id = $1", &[T("3")], "1");
    c.check("SELECT * FROM orders o JOIN order_items i ON i.tenant_id = o.tenant_id AND i.order_id = o.id WHERE o.tenant_id = $1", &[T("42")], "0");
    // Unqualified: the item keyed by that name.
    c.check("SELECT * FROM users u JOIN orders o ON tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM users, orders WHERE id = tenant_id", &[], "all");
    // Co-location needs one key space: type, function, shard count and placement.
    c.check("SELECT * FROM users u JOIN stores s ON s.region_id = u.id", &[], "err: joins users u, which is sharded, with stores s");
    c.check("SELECT * FROM orders o JOIN metrics m ON m.device_id = o.tenant_id", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM users u JOIN accounts a ON a.email = u.name", &[], "err: but not on their sharding keys");
    // A key that is not the key of the table named.
    c.check("SELECT * FROM users u JOIN orders o ON o.id = u.id", &[], "err: but not on their sharding keys");
    // USING and NATURAL: when the column is the key of both.
    c.check("SELECT * FROM orders JOIN order_items USING (tenant_id)", &[], "all");
    c.check("SELECT * FROM orders o JOIN order_items i USING (tenant_id, id)", &[], "all");
    c.check("SELECT * FROM orders o JOIN order_items i USING (id)", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM users u JOIN orders o USING (id)", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders NATURAL JOIN order_items", &[], "all");
    c.check("SELECT * FROM users NATURAL JOIN orders", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders JOIN order_items USING (tenant_id) JOIN counters k ON k.partition_id = tenant_id", &[], "all");
    // Column aliases rename a table's columns: its key's name says nothing any more.
    c.check("SELECT * FROM users u(id) JOIN orders o ON o.tenant_id = u.id", &[], "err: but not on their sharding keys");
}

/// Omnisharded and catalog tables, functions and VALUES are whole on every database: joining
/// them needs no key.
#[test]
#[rustfmt::skip]
fn rows_on_every_database() {
    let c = prod();
    c.check("SELECT * FROM orders o JOIN countries c ON c.code = o.country", &[], "all");
    c.check("SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id JOIN countries c ON c.code = o.country", &[], "all");
    c.check("SELECT * FROM orders o, ref.currencies r, countries c WHERE c.code = o.country", &[], "all");
    c.check("SELECT * FROM orders o JOIN pg_class c ON c.relname = 'orders'", &[], "all");
    c.check("SELECT * FROM orders o, generate_series(1, 3) g", &[], "all");
    c.check("SELECT * FROM orders o CROSS JOIN LATERAL unnest(o.tags) t", &[], "all");
    c.check("SELECT * FROM orders o JOIN (VALUES (1), (2)) v(x) ON v.x = o.amount", &[], "all");
    c.check("SELECT * FROM orders o JOIN (SELECT * FROM countries) c ON c.code = o.country", &[], "all");
    c.check("WITH c AS (SELECT * FROM countries) SELECT * FROM orders o JOIN c ON c.code = o.country", &[], "all");
    c.check("SELECT * FROM countries c JOIN ref.currencies r ON r.code = c.currency", &[], "any");
    c.check("SELECT * FROM orders o LEFT JOIN countries c ON c.code = o.country", &[], "all");
    // Kept by an outer join, such rows would come back from every database, each matched with
    // its own part of the sharded side only: one shard, or an error.
    c.check("SELECT * FROM countries c LEFT JOIN orders o ON o.country = c.code", &[], "err: this statement outer-joins orders o, which is sharded, to rows that every database holds");
    c.check("SELECT * FROM orders o RIGHT JOIN countries c ON o.country = c.code", &[], "err: outer-joins orders o");
    c.check("SELECT * FROM countries c FULL JOIN orders o ON o.country = c.code", &[], "err: outer-joins orders o");
    c.check("SELECT * FROM generate_series(1, 3) g LEFT JOIN orders o ON o.tenant_id = g", &[], "err: outer-joins orders o");
    c.check("SELECT * FROM countries c LEFT JOIN orders o ON o.country = c.code AND o.tenant_id = 3", &[], "err: outer-joins orders o");
    c.check("SELECT * FROM countries c LEFT JOIN orders o ON o.country = c.code WHERE o.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM countries c LEFT JOIN orders o ON o.country = c.code WHERE o.tenant_id = $1", &[T("42")], "0");
    c.check("SELECT * FROM countries c LEFT JOIN orders o ON o.country = c.code WHERE o.tenant_id = $1", &[N], "err: outer-joins orders o");
    prod().shard(0).check("SELECT * FROM countries c LEFT JOIN orders o ON o.country = c.code", &[], "0");
}

/// Outer joins: an equality between the two sides of its ON connects them (each kept row meets
/// its partners on its own database, and is null-extended there when it has none anywhere); one
/// between two items of a side it keeps connects nothing (it filters none of their rows).
#[test]
#[rustfmt::skip]
fn outer_joins() {
    let c = prod();
    c.check("SELECT * FROM users u LEFT JOIN orders o ON o.tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM orders o LEFT JOIN users u ON u.id = o.tenant_id", &[], "all");
    c.check("SELECT * FROM users u RIGHT JOIN orders o ON o.tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM users u FULL JOIN orders o ON o.tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM users u LEFT JOIN orders o USING (id)", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders o LEFT JOIN order_items i USING (tenant_id)", &[], "all");
    c.check("SELECT * FROM users u LEFT JOIN orders o ON o.tenant_id = u.id AND o.amount > 3", &[], "all");
    c.check("SELECT * FROM users u LEFT JOIN orders o ON o.tenant_id = u.id LEFT JOIN order_items i ON i.tenant_id = o.tenant_id AND i.order_id = o.id", &[], "all");
    c.check("SELECT * FROM users u LEFT JOIN orders o ON o.grp = u.grp", &[], "err: joins users u, which is sharded, with orders o, which is sharded, but not on their sharding keys");
    c.check("SELECT * FROM users u LEFT JOIN orders o ON o.tenant_id = u.id OR o.amount > 3", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders o LEFT JOIN order_items i ON i.tenant_id = 3", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders o LEFT JOIN order_items i ON i.order_id = o.id WHERE o.tenant_id = 3", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders o LEFT JOIN order_items i ON i.order_id = o.id AND i.tenant_id = o.tenant_id WHERE o.tenant_id = 3", &[], "1");
    // A WHERE equality drops the null-extended rows: the join is an inner one.
    c.check("SELECT * FROM users u LEFT JOIN orders o ON o.grp = u.grp WHERE o.tenant_id = u.id", &[], "all");
    // Two items of a kept side are not connected by the ON ...
    c.check("SELECT * FROM (users u CROSS JOIN orders o) LEFT JOIN order_items i ON i.tenant_id = u.id AND i.tenant_id = o.tenant_id", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM users u FULL JOIN (orders o CROSS JOIN order_items i) ON o.tenant_id = u.id AND i.tenant_id = u.id", &[], "err: but not on their sharding keys");
    // ... but by the WHERE, or an inner join's ON, they are.
    c.check("SELECT * FROM (users u CROSS JOIN orders o) LEFT JOIN order_items i ON i.tenant_id = u.id WHERE o.tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM (users u JOIN orders o ON o.tenant_id = u.id) LEFT JOIN order_items i ON i.tenant_id = o.tenant_id", &[], "all");
    // The rows of a nullable side that fail its ON are dropped: the ON connects them.
    c.check("SELECT * FROM users u LEFT JOIN (orders o CROSS JOIN order_items i) ON i.tenant_id = o.tenant_id AND o.tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM users u LEFT JOIN (orders o CROSS JOIN order_items i) ON o.tenant_id = u.id", &[], "err: but not on their sharding keys");
    // A nested outer join inside a nullable side whose rows the outer ON then filters.
    c.check("SELECT * FROM users u LEFT JOIN (orders o LEFT JOIN order_items i ON i.order_id = o.id) ON o.tenant_id = u.id AND i.tenant_id = o.tenant_id", &[], "all");
    c.check("SELECT * FROM users u LEFT JOIN (orders o LEFT JOIN order_items i ON i.order_id = o.id) ON o.tenant_id = u.id", &[], "err: but not on their sharding keys");
}

/// FROM subqueries and CTEs: an output column that is a plain sharding key column of a table
/// of their own level is that key; anything else is not.
#[test]
#[rustfmt::skip]
fn subqueries_and_ctes() {
    let c = prod();
    c.check("SELECT * FROM users u JOIN (SELECT * FROM orders WHERE amount > 3) o ON o.tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM users u JOIN (SELECT o.* FROM orders o) s ON s.tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM users u JOIN (SELECT tenant_id AS uid, amount FROM orders) o ON o.uid = u.id", &[], "all");
    c.check("SELECT * FROM users u JOIN (SELECT o.tenant_id FROM orders o) s(uid) ON s.uid = u.id", &[], "all");
    c.check("SELECT * FROM users u JOIN (SELECT tenant_id, count(*) AS n FROM orders GROUP BY tenant_id) o ON o.tenant_id = u.id WHERE u.id = 3", &[], "1");
    c.check("SELECT * FROM users u JOIN (SELECT o.tenant_id, i.amount FROM orders o JOIN order_items i ON i.tenant_id = o.tenant_id) s ON s.tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM (SELECT * FROM users) u JOIN (SELECT * FROM orders) o ON o.tenant_id = u.id", &[], "all");
    c.check("SELECT * FROM users u JOIN (SELECT amount, tenant_id FROM orders) s(tenant_id, t) ON s.tenant_id = u.id", &[], "err: joins users u, which is sharded, with orders (read by s), which is sharded");
    c.check("SELECT * FROM users u JOIN (SELECT amount, tenant_id FROM orders) s(a, uid) ON s.uid = u.id", &[], "all");
    c.check("SELECT * FROM users u JOIN (SELECT tenant_id + 0 AS tenant_id FROM orders) o ON o.tenant_id = u.id", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM users u JOIN (SELECT tenant_id FROM orders UNION ALL SELECT tenant_id FROM order_items) o ON o.tenant_id = u.id", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM users u JOIN (SELECT * FROM orders WHERE amount > 3) o ON o.amount = u.score", &[], "err: with orders (read by o), which is sharded, but not on their sharding keys");
    // Restricted inside: where the subquery's rows are.
    c.check("SELECT * FROM users u JOIN (SELECT * FROM orders WHERE tenant_id = 3) o ON o.amount = u.score WHERE u.id = 4", &[], "1");
    c.check("SELECT * FROM users u JOIN (SELECT * FROM orders WHERE tenant_id = 3) o ON o.amount = u.score", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM orders o LEFT JOIN (SELECT * FROM order_items WHERE tenant_id = 4) i ON i.order_id = o.id WHERE o.tenant_id = 3", &[], "1");
    // A subquery over a sharded join checks its own level.
    c.check("SELECT * FROM (SELECT u.id FROM users u JOIN orders o ON o.amount = u.score) s", &[], "err: joins users u, which is sharded, with orders o");
    c.check("SELECT count(*) FROM (SELECT u.id FROM users u JOIN orders o ON o.tenant_id = u.id) s", &[], "all");
    // CTEs, as the statement's FROM names them.
    c.check("WITH o AS (SELECT * FROM orders WHERE amount > 3) SELECT * FROM users u JOIN o ON o.tenant_id = u.id", &[], "all");
    c.check("WITH o(uid) AS (SELECT tenant_id FROM orders) SELECT * FROM users u JOIN o ON o.uid = u.id", &[], "all");
    c.check("WITH o AS (SELECT * FROM orders) SELECT * FROM users u JOIN o x ON x.tenant_id = u.id", &[], "all");
    c.check("WITH o AS (SELECT * FROM orders) SELECT * FROM users u JOIN o ON o.amount = u.score", &[], "err: with orders (read by o), which is sharded, but not on their sharding keys");
    c.check("WITH o AS (SELECT * FROM orders WHERE tenant_id = 3) SELECT * FROM o JOIN order_items i ON i.order_id = o.id", &[], "err: but not on their sharding keys");
    c.check("WITH o AS (SELECT * FROM orders WHERE tenant_id = 3) SELECT * FROM o JOIN order_items i ON i.tenant_id = o.tenant_id", &[], "1");
    c.check("WITH u AS (SELECT * FROM users u JOIN orders o ON o.amount = u.score) SELECT * FROM u", &[], "err: joins users u, which is sharded, with orders o");
    // A CTE read through another CTE is not followed for its keys (its tables are).
    c.check("WITH a AS (SELECT * FROM orders), b AS (SELECT * FROM a) SELECT * FROM users u JOIN b ON b.tenant_id = u.id", &[], "err: with orders (read by b), which is sharded");
    // LATERAL, correlated with an item before it on a co-located key.
    c.check("SELECT * FROM users u, LATERAL (SELECT * FROM orders o WHERE o.tenant_id = u.id ORDER BY o.amount DESC LIMIT 3) x", &[], "all");
    c.check("SELECT * FROM users u LEFT JOIN LATERAL (SELECT * FROM orders o WHERE o.tenant_id = u.id LIMIT 3) x ON true", &[], "all");
    c.check("SELECT * FROM users u JOIN LATERAL (SELECT * FROM orders o WHERE u.id = o.tenant_id) x ON x.amount > 3", &[], "all");
    c.check("SELECT * FROM users u, LATERAL (SELECT * FROM orders o WHERE o.amount = u.score) x", &[], "err: with orders (read by x), which is sharded, but not on their sharding keys");
    c.check("SELECT * FROM orders o LEFT JOIN LATERAL (SELECT * FROM order_items i WHERE i.order_id = o.id AND i.tenant_id = 3) i ON true", &[], "err: but not on their sharding keys");
}

/// Every level of the statement is checked: sublinks, set operations' arms, an INSERT's SELECT,
/// UPDATE ... FROM, DELETE ... USING, MERGE; not DDL.
#[test]
#[rustfmt::skip]
fn every_level() {
    let c = prod();
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.tenant_id = u.id)", &[], "err: joins orders o, which is sharded, with order_items i");
    c.check("SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o JOIN order_items i ON i.order_id = o.id AND i.tenant_id = o.tenant_id WHERE o.tenant_id = u.id)", &[], "all");
    c.check("SELECT * FROM countries WHERE code IN (SELECT o.country FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.tenant_id = 3 AND i.tenant_id = 3)", &[], "1");
    c.check("SELECT id FROM users UNION ALL SELECT u.id FROM users u JOIN orders o ON o.amount = u.score", &[], "err: but not on their sharding keys");
    c.check("SELECT u.id FROM users u JOIN orders o ON o.tenant_id = u.id UNION ALL SELECT id FROM users", &[], "all");
    c.check("INSERT INTO order_items (tenant_id, order_id) SELECT o.tenant_id, o.id FROM orders o JOIN users u ON u.score = o.amount", &[], "err: joins orders o, which is sharded, with users u");
    c.check("INSERT INTO order_items (tenant_id, order_id) SELECT o.tenant_id, o.id FROM orders o JOIN users u ON u.id = o.tenant_id", &[], "w all");
    c.check("UPDATE orders o SET amount = 0 FROM users u WHERE u.id = o.tenant_id AND u.score > 3", &[], "w all");
    c.check("UPDATE orders o SET amount = 0 FROM users u WHERE u.score = o.amount", &[], "err: joins orders o, which is sharded, with users u");
    c.check("UPDATE orders o SET amount = 0 FROM users u WHERE u.score = o.amount AND o.tenant_id = 3 AND u.id = 3", &[], "w 1");
    c.check("UPDATE orders o SET amount = 1 FROM order_items i WHERE i.order_id = o.id AND o.tenant_id = 3", &[], "err: joins orders o, which is sharded, with order_items i");
    c.check("UPDATE orders o SET amount = 0 FROM countries c WHERE c.code = o.country", &[], "w all");
    c.check("DELETE FROM orders o USING users u WHERE u.id = o.tenant_id AND u.score < 0", &[], "w all");
    c.check("DELETE FROM orders o USING users u WHERE u.score = o.amount", &[], "err: but not on their sharding keys");
    c.check("MERGE INTO orders o USING order_items i ON o.tenant_id = i.tenant_id AND o.id = i.order_id AND o.tenant_id = 3 WHEN MATCHED THEN UPDATE SET amount = 1", &[], "w 1");
    c.check("MERGE INTO orders o USING order_items i ON o.id = i.order_id AND o.tenant_id = 3 WHEN MATCHED THEN UPDATE SET amount = 1", &[], "err: joins orders o, which is sharded, with order_items i");
    c.check("MERGE INTO orders o USING (SELECT * FROM order_items WHERE tenant_id = 3) i ON o.id = i.order_id AND o.tenant_id = 3 WHEN MATCHED THEN UPDATE SET amount = 1", &[], "w 1");
    c.check("EXPLAIN SELECT * FROM users u JOIN orders o ON o.amount = u.score", &[], "err: but not on their sharding keys");
    c.check("COPY (SELECT * FROM users u JOIN orders o ON o.amount = u.score) TO STDOUT", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM users u JOIN orders o ON o.amount = u.score FOR UPDATE", &[], "err: but not on their sharding keys");
    // Schema changes are not run here (a view's joins run where it is read).
    c.check("CREATE VIEW v AS SELECT * FROM users u JOIN orders o ON o.amount = u.score", &[], "w all");
    // A statement string: each statement on its own.
    c.check("SELECT 1; SELECT * FROM users u JOIN orders o ON o.amount = u.score", &[], "err: but not on their sharding keys");
}

/// Family tables live on one database each; unknown tables are sharded by a key pgshard may
/// not know (column-only entries give one).
#[test]
#[rustfmt::skip]
fn families_and_unknown_tables() {
    let c = prod();
    c.check("SELECT * FROM events_p3 JOIN events_p4 USING (id)", &[], "1");
    c.check("SELECT * FROM events_p3 e JOIN orders o ON o.id = e.id WHERE o.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM events_p3 e JOIN orders o ON o.id = e.id", &[], "err: joins events_p3 e, which is a sharded table family, with orders o, which is sharded");
    c.check("SELECT * FROM events_p3 e JOIN counters k ON k.partition_id = 3", &[], "1");
    c.check("SELECT * FROM foo f JOIN bar b ON b.foo_id = f.id", &[], "err: joins foo f, which is not in the sharding config (so is treated as sharded), with bar b");
    c.check("SELECT * FROM foo f JOIN orders o ON o.id = f.order_id WHERE o.tenant_id = 3", &[], "err: joins foo f, which is not in the sharding config (so is treated as sharded), with orders o");
    c.check("SELECT * FROM invoices i JOIN payments p ON p.customer_id = i.customer_id", &[], "all");
    c.check("SELECT * FROM invoices i JOIN payments p USING (customer_id)", &[], "all");
    c.check("SELECT * FROM invoices i JOIN payments p ON p.invoice_id = i.id WHERE i.customer_id = 3 AND p.customer_id = 3", &[], "1");
    c.check("SELECT * FROM invoices i JOIN payments p ON p.invoice_id = i.id WHERE i.customer_id = 3", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM invoices i JOIN orders o ON o.tenant_id = i.customer_id", &[], "all");
}

/// cross_shard_disabled refuses fan-outs first; a join on one shard is fine.
#[test]
#[rustfmt::skip]
fn cross_shard_disabled() {
    let strict = on("strict");
    strict.check("SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id", &[], "err: cross-shard queries are disabled");
    strict.check("SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id WHERE u.id = 3", &[], "1");
    strict.check("SELECT * FROM users u JOIN orders o ON o.amount = u.score WHERE u.id = 3", &[], "err: but not on their sharding keys");
}

/// Long join chains connect in one pass (inner joins first) and plan in
/// time roughly linear in their length.
#[test]
fn long_chains() {
    let c = prod();
    let started = std::time::Instant::now();
    let mut chain = String::from("SELECT * FROM users u0");
    for i in 1..400 {
        chain.push_str(&format!(" LEFT JOIN users u{i} ON u{i}.id = u{}.id", i - 1));
    }
    c.check(&chain, &[], "all");
    let mut off_key = chain.clone();
    off_key.push_str(" LEFT JOIN orders o ON o.amount = u399.score");
    c.check(&off_key, &[], "err: but not on their sharding keys");
    let list: Vec<String> = (0..400).map(|i| format!("users u{i}")).collect();
    let equalities: Vec<String> = (1..400)
        .map(|i| format!("u{i}.id = u{}.id", i - 1))
        .collect();
    c.check(
        &format!(
            "SELECT * FROM {} WHERE {}",
            list.join(", "),
            equalities.join(" AND ")
        ),
        &[],
        "all",
    );
    c.check(
        &format!("SELECT * FROM {}", list.join(", ")),
        &[],
        "err: but not on their sharding keys",
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}
