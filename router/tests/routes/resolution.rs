//! Which table a condition's column is: a level's condition restricts rows
//! only through its own tables' keys, or through a FROM subquery's or CTE's
//! output column that passes such a key through unchanged. Each "all" here
//! once went to one shard and missed the rows on the others.

use super::*;

#[test]
#[rustfmt::skip]
fn outer_columns_are_the_subquery_outputs() {
    let c = prod();
    // The outer `tenant_id` is the subquery's output: orders.amount.
    c.check("SELECT count(*) FROM (SELECT tenant_id AS x, amount AS tenant_id FROM orders) s WHERE tenant_id = 3", &[], "all");
    c.check("SELECT count(*) FROM (SELECT tenant_id AS x, amount AS tenant_id FROM orders) s WHERE s.tenant_id = 3", &[], "all");
    c.check("SELECT count(*) FROM (SELECT tenant_id AS x, amount AS tenant_id FROM orders) s WHERE x = 3", &[], "1");
    c.check("SELECT count(*) FROM (SELECT tenant_id AS x, amount AS tenant_id FROM orders) s WHERE s.x = $1", &[T("3")], "1");
    // Plain pass-through: `*`, `t.*`, `k`, `t.k AS x`, through levels and column aliases.
    c.check("SELECT * FROM (SELECT * FROM orders) s WHERE tenant_id = 3", &[], "1");
    c.check("SELECT * FROM (SELECT o.* FROM orders o) s WHERE tenant_id = 3", &[], "1");
    c.check("SELECT * FROM (SELECT o.tenant_id AS k FROM orders o) s WHERE s.k = 3", &[], "1");
    c.check("SELECT * FROM (SELECT * FROM (SELECT tenant_id AS k FROM orders) a) b WHERE k = 3", &[], "1");
    c.check("SELECT * FROM (SELECT tenant_id, amount FROM orders) s(tenant_id) WHERE tenant_id = 3", &[], "1");
    c.check("SELECT * FROM (SELECT tenant_id, amount FROM orders) s(x, tenant_id) WHERE tenant_id = 3", &[], "all");
    // A column alias reaching a `*` hides which column is which.
    c.check("SELECT * FROM (SELECT * FROM orders) s(a, b) WHERE tenant_id = 3", &[], "all");
    // A table with column aliases: `tenant_id` may now be any of its columns.
    c.check("SELECT * FROM orders o(id, tenant_id) WHERE tenant_id = 3", &[], "all");
    c.check("SELECT * FROM orders o(id, tenant_id) WHERE o.tenant_id = 3", &[], "all");
    // A computed output is no key, even named like one.
    c.check("SELECT * FROM (SELECT tenant_id + 0 AS tenant_id FROM orders) s WHERE tenant_id = 3", &[], "all");
    c.check("SELECT * FROM (SELECT max(tenant_id) AS tenant_id FROM orders) s WHERE tenant_id = 3", &[], "all");
    // Grouping by the key keeps each group on its shard.
    c.check("SELECT * FROM (SELECT tenant_id, count(*) FROM orders GROUP BY tenant_id) s WHERE tenant_id = 3", &[], "1");
}

#[test]
#[rustfmt::skip]
fn levels_whose_rows_change_across_shards_pass_no_key() {
    let c = prod();
    c.check("SELECT * FROM (SELECT * FROM orders LIMIT 10) s WHERE tenant_id = 3", &[], "all");
    c.check("SELECT * FROM (SELECT * FROM orders OFFSET 1) s WHERE tenant_id = 3", &[], "all");
    c.check("SELECT * FROM (SELECT * FROM orders FETCH FIRST 1 ROWS ONLY) s WHERE tenant_id = 3", &[], "all");
    c.check("SELECT * FROM (SELECT *, row_number() OVER () AS n FROM orders) s WHERE tenant_id = 3", &[], "all");
    c.check("SELECT * FROM (SELECT tenant_id, sum(amount) OVER w FROM orders WINDOW w AS (ORDER BY id)) s WHERE tenant_id = 3", &[], "all");
    c.check("SELECT * FROM (SELECT DISTINCT ON (amount) * FROM orders) s WHERE tenant_id = 3", &[], "all");
    c.check("SELECT * FROM (SELECT * FROM orders UNION ALL SELECT * FROM orders) s WHERE tenant_id = 3", &[], "all");
    c.check("WITH d AS (DELETE FROM countries RETURNING code AS tenant_id) SELECT * FROM d, orders o WHERE d.tenant_id = 3", &[], "err: writes omnisharded table countries in a data-modifying WITH query");
}

#[test]
#[rustfmt::skip]
fn ctes() {
    let c = prod();
    c.check("WITH s AS (SELECT tenant_id AS x, amount AS tenant_id FROM orders) SELECT count(*) FROM s WHERE tenant_id = 3", &[], "all");
    c.check("WITH s AS (SELECT * FROM orders) SELECT count(*) FROM s WHERE tenant_id = 3", &[], "1");
    c.check("WITH s (x, tenant_id) AS (SELECT tenant_id, amount FROM orders) SELECT count(*) FROM s WHERE tenant_id = 3", &[], "all");
    c.check("WITH s (x, tenant_id) AS (SELECT tenant_id, amount FROM orders) SELECT count(*) FROM s WHERE x = 3", &[], "1");
    // A reference's column aliases override the CTE's.
    c.check("WITH s (x, y) AS (SELECT tenant_id, amount FROM orders) SELECT count(*) FROM s AS r(tenant_id) WHERE tenant_id = 3", &[], "1");
    c.check("WITH a AS (SELECT * FROM orders), b AS (SELECT tenant_id AS k FROM a) SELECT * FROM b WHERE k = 3", &[], "1");
    // An inner CTE shadows an outer one of the same name.
    c.check("WITH c AS (SELECT * FROM orders) SELECT * FROM (WITH c AS (SELECT amount AS tenant_id FROM orders) SELECT * FROM c) s WHERE tenant_id = 3", &[], "all");
    c.check("WITH c AS (SELECT amount AS tenant_id FROM orders) SELECT * FROM (WITH c AS (SELECT * FROM orders) SELECT * FROM c) s WHERE tenant_id = 3", &[], "1");
}

#[test]
#[rustfmt::skip]
fn qualifiers_name_the_level_s_items() {
    let c = prod();
    // `s` is a subquery here and a table alias in the other arm: the
    // qualifier names this level's item.
    c.check("SELECT s.id FROM (SELECT amount AS tenant_id, id FROM orders) s WHERE s.tenant_id = 3 INTERSECT SELECT s.id FROM orders s", &[], "all");
    c.check("SELECT o.id FROM unnest('{3}'::bigint[]) AS s(tenant_id), orders o WHERE s.tenant_id = 3 INTERSECT SELECT s.id FROM orders s", &[], "all");
    // A function in FROM has no key.
    c.check("SELECT * FROM unnest('{3}'::bigint[]) AS s(tenant_id) JOIN orders o ON true WHERE s.tenant_id = 3", &[], "all");
    // A column of another level is that level's.
    c.check("SELECT * FROM countries c WHERE tenant_id = 3 INTERSECT SELECT * FROM countries WHERE code IN (SELECT code FROM orders WHERE tenant_id = 3)", &[], "1");
    c.check("SELECT * FROM countries WHERE tenant_id = 3 UNION ALL SELECT * FROM orders WHERE id = 3", &[], "all");
}

#[test]
#[rustfmt::skip]
fn joins_of_tables_and_subqueries() {
    let c = prod();
    c.check("SELECT * FROM orders o JOIN (SELECT tenant_id AS t, amount AS tenant_id FROM order_items) i ON i.t = o.tenant_id WHERE o.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM orders o JOIN (SELECT tenant_id AS t, amount AS tenant_id FROM order_items) i ON i.t = o.tenant_id WHERE i.tenant_id = 3", &[], "all");
    c.check("SELECT * FROM orders o JOIN (SELECT * FROM order_items) i ON i.tenant_id = o.tenant_id WHERE i.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM countries c JOIN (SELECT * FROM orders) s ON s.country = c.code WHERE tenant_id = 3", &[], "1");
    c.check("SELECT * FROM countries c JOIN (SELECT amount AS tenant_id FROM orders) s ON true WHERE tenant_id = 3", &[], "all");
    // INSERT ... SELECT: the SELECT's `tenant_id` is countries', not the target's key.
    c.check("INSERT INTO order_items (tenant_id, order_id) SELECT c.id, c.tenant_id FROM countries c WHERE tenant_id = 3", &[], "err: sharding key tenant_id");
    c.check("INSERT INTO order_items (tenant_id, order_id) SELECT tenant_id, id FROM (SELECT * FROM orders) s WHERE tenant_id = 3", &[], "w 1");
    // UPDATE ... FROM and DELETE ... USING: the target is an item of the level.
    c.check("UPDATE order_items i SET amount = 1 FROM (SELECT amount AS k FROM orders) s WHERE i.tenant_id = 3 AND s.k = i.amount", &[], "err: joins order_items i");
    c.check("DELETE FROM order_items i USING (SELECT * FROM orders) s WHERE s.tenant_id = i.tenant_id AND s.tenant_id = 3", &[], "w 1");
}
