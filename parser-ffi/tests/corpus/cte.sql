WITH active AS (SELECT id FROM users WHERE active) SELECT * FROM active
----
WITH a AS (SELECT 1 AS x), b AS (SELECT x + 1 AS y FROM a) SELECT * FROM a, b
----
WITH regional_sales AS (
    SELECT region, sum(amount) AS total_sales
    FROM orders
    GROUP BY region
), top_regions AS (
    SELECT region
    FROM regional_sales
    WHERE total_sales > (SELECT sum(total_sales) / 10 FROM regional_sales)
)
SELECT region, product, sum(quantity) AS product_units, sum(amount) AS product_sales
FROM orders
WHERE region IN (SELECT region FROM top_regions)
GROUP BY region, product
----
WITH RECURSIVE t(n) AS (VALUES (1) UNION ALL SELECT n + 1 FROM t WHERE n < 100) SELECT sum(n) FROM t
----
WITH RECURSIVE subordinates AS (
    SELECT id, manager_id, name, 1 AS depth FROM employees WHERE id = $1
    UNION ALL
    SELECT e.id, e.manager_id, e.name, s.depth + 1
    FROM employees e JOIN subordinates s ON e.manager_id = s.id
)
SELECT * FROM subordinates ORDER BY depth, name
----
WITH RECURSIVE included_parts(sub_part, part, quantity) AS (
    SELECT sub_part, part, quantity FROM parts WHERE part = 'our_product'
  UNION ALL
    SELECT p.sub_part, p.part, p.quantity * pr.quantity
    FROM included_parts pr, parts p
    WHERE p.part = pr.sub_part
)
SELECT sub_part, SUM(quantity) AS total_quantity FROM included_parts GROUP BY sub_part
----
WITH RECURSIVE search_tree(id, link, data) AS (
    SELECT t.id, t.link, t.data FROM tree t
  UNION ALL
    SELECT t.id, t.link, t.data FROM tree t, search_tree st WHERE t.id = st.link
) SEARCH DEPTH FIRST BY id SET ordercol
SELECT * FROM search_tree ORDER BY ordercol
----
WITH RECURSIVE search_tree(id, link, data) AS (
    SELECT t.id, t.link, t.data FROM tree t
  UNION ALL
    SELECT t.id, t.link, t.data FROM tree t, search_tree st WHERE t.id = st.link
) SEARCH BREADTH FIRST BY id, link SET level_order
SELECT * FROM search_tree ORDER BY level_order
----
WITH RECURSIVE search_graph(id, link, data, depth) AS (
    SELECT g.id, g.link, g.data, 0 FROM graph g
  UNION ALL
    SELECT g.id, g.link, g.data, sg.depth + 1 FROM graph g, search_graph sg WHERE g.id = sg.link
) CYCLE id SET is_cycle USING path
SELECT * FROM search_graph
----
WITH RECURSIVE search_graph(id, link, data, depth) AS (
    SELECT g.id, g.link, g.data, 0 FROM graph g
  UNION ALL
    SELECT g.id, g.link, g.data, sg.depth + 1 FROM graph g, search_graph sg WHERE g.id = sg.link
) CYCLE id, link SET is_cycle TO 'Y' DEFAULT 'N' USING path
SELECT * FROM search_graph WHERE NOT is_cycle::text = 'Y'
----
WITH RECURSIVE g(id, nxt) AS (
    SELECT id, nxt FROM edges WHERE id = 1
  UNION ALL
    SELECT e.id, e.nxt FROM edges e JOIN g ON e.id = g.nxt
) SEARCH DEPTH FIRST BY id SET ord CYCLE id SET cyc USING pth
SELECT id FROM g ORDER BY ord
----
WITH w AS MATERIALIZED (SELECT * FROM big_table WHERE key = 123) SELECT * FROM w WHERE w.extra = 'x'
----
WITH w AS NOT MATERIALIZED (SELECT * FROM big_table) SELECT * FROM w AS t1 JOIN w AS t2 ON t1.key = t2.ref WHERE t2.key = 123
----
WITH moved_rows AS (
    DELETE FROM products WHERE "date" >= '2010-10-01' AND "date" < '2010-11-01' RETURNING *
)
INSERT INTO products_log SELECT * FROM moved_rows
----
WITH t AS (UPDATE products SET price = price * 1.05 RETURNING *) SELECT * FROM t
----
WITH ins AS (INSERT INTO users (email, tenant_id) VALUES ('a@example.com', 3) RETURNING id) INSERT INTO profiles (user_id) SELECT id FROM ins
----
WITH upd AS (
    UPDATE employees SET sales_count = sales_count + 1
    WHERE id = (SELECT sales_person FROM accounts WHERE name = 'Acme Corporation')
    RETURNING *
)
INSERT INTO employees_log SELECT *, current_timestamp FROM upd
----
WITH deleted AS (DELETE FROM sessions WHERE expires_at < now() RETURNING user_id) SELECT user_id, count(*) FROM deleted GROUP BY user_id
----
WITH src AS (SELECT * FROM staging WHERE batch_id = $1) MERGE INTO target t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET val = s.val WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.val)
----
WITH recent AS (SELECT id FROM orders WHERE created_at > now() - interval '7 days') UPDATE orders SET flagged = true WHERE id IN (SELECT id FROM recent)
----
WITH stale AS (SELECT id FROM carts WHERE updated_at < now() - interval '30 days') DELETE FROM carts WHERE id IN (SELECT id FROM stale)
----
WITH RECURSIVE fib(a, b, n) AS (SELECT 0::numeric, 1::numeric, 1 UNION ALL SELECT b, a + b, n + 1 FROM fib WHERE n < 50) SELECT n, a FROM fib
----
WITH RECURSIVE dates(d) AS (SELECT date '2024-01-01' UNION ALL SELECT d + 1 FROM dates WHERE d < date '2024-01-31') SELECT d FROM dates
----
WITH RECURSIVE path(node, route) AS (
    SELECT 'A'::text, ARRAY['A']
    UNION
    SELECT e.dst, p.route || e.dst FROM edges e JOIN path p ON e.src = p.node WHERE NOT e.dst = ANY (p.route)
)
SELECT * FROM path
----
WITH x(a, b) AS (VALUES (1, 2), (3, 4)) SELECT a * b FROM x
----
WITH cfg AS (SELECT current_setting('app.tenant')::int AS tenant_id) SELECT o.* FROM orders o, cfg WHERE o.tenant_id = cfg.tenant_id
----
WITH a AS (SELECT 1), b AS (WITH c AS (SELECT 2) SELECT * FROM c) SELECT * FROM a, b
----
SELECT * FROM (WITH inner_cte AS (SELECT 10 AS v) SELECT v * 2 AS doubled FROM inner_cte) s
----
SELECT (WITH z AS (SELECT max(id) AS m FROM t) SELECT m FROM z) AS top_id
----
WITH per_user AS (
    SELECT user_id, count(*) AS c FROM events WHERE tenant_id = 9 GROUP BY user_id
), ranked AS (
    SELECT user_id, c, rank() OVER (ORDER BY c DESC) AS r FROM per_user
)
SELECT * FROM ranked WHERE r <= 10
----
WITH RECURSIVE cnt(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM cnt LIMIT 1000) SELECT count(*) FROM cnt
----
WITH del AS (DELETE FROM queue WHERE id = (SELECT id FROM queue ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING *) INSERT INTO archive SELECT * FROM del RETURNING id
----
WITH a AS (INSERT INTO t1 VALUES (1) RETURNING id), b AS (INSERT INTO t2 SELECT id FROM a RETURNING id) SELECT * FROM b
----
WITH RECURSIVE tree AS (
  SELECT id, parent_id, name, name::text AS full_path FROM categories WHERE parent_id IS NULL
  UNION ALL
  SELECT c.id, c.parent_id, c.name, tree.full_path || ' > ' || c.name FROM categories c INNER JOIN tree ON c.parent_id = tree.id
)
SELECT id, full_path FROM tree ORDER BY full_path
----
WITH totals AS MATERIALIZED (SELECT tenant_id, sum(amount) s FROM invoices GROUP BY tenant_id) SELECT t.name, totals.s FROM tenants t LEFT JOIN totals USING (tenant_id)
----
WITH "Quoted CTE" AS (SELECT 1 AS "Col") SELECT "Col" FROM "Quoted CTE"
----
WITH v AS (VALUES ('x'), ('y')) TABLE v
----
WITH RECURSIVE r AS (SELECT 1 AS i UNION SELECT i + 1 FROM r WHERE i < 5) SELECT * FROM r UNION ALL SELECT -1
----
WITH upsert AS (
    UPDATE inventory SET qty = qty + 5 WHERE sku = 'ABC-1' RETURNING *
)
INSERT INTO inventory (sku, qty) SELECT 'ABC-1', 5 WHERE NOT EXISTS (SELECT * FROM upsert)
----
WITH RECURSIVE walk(id, depth) AS (
  SELECT id, 0 FROM nodes WHERE id = ANY ($1::int[])
  UNION ALL
  SELECT n.id, w.depth + 1 FROM nodes n JOIN walk w ON n.parent = w.id WHERE w.depth < $2
) CYCLE id SET looped USING trail
SELECT DISTINCT id FROM walk
----
WITH ids AS (SELECT unnest($1::bigint[]) AS id) SELECT u.* FROM users u JOIN ids USING (id) WHERE u.tenant_id = $2
----
WITH counts AS (SELECT topic_id, count(*) n FROM messages GROUP BY topic_id) UPDATE topics t SET message_count = c.n FROM counts c WHERE c.topic_id = t.id
----
WITH month_totals AS (
  SELECT date_trunc('month', paid_at) AS m, sum(amount) AS total FROM payments GROUP BY 1
)
SELECT m, total, total - lag(total) OVER (ORDER BY m) AS delta FROM month_totals ORDER BY m
----
WITH RECURSIVE chars(i, ch) AS (SELECT 1, substr('hello', 1, 1) UNION ALL SELECT i + 1, substr('hello', i + 1, 1) FROM chars WHERE i < length('hello')) SELECT string_agg(ch, '-' ORDER BY i DESC) FROM chars
----
WITH a AS (SELECT * FROM t WHERE tenant_id = 1), b AS (SELECT * FROM t WHERE tenant_id = 2) SELECT * FROM a EXCEPT SELECT * FROM b
----
WITH w AS (SELECT id FROM jobs WHERE state = 'pending' ORDER BY priority DESC LIMIT 10 FOR UPDATE SKIP LOCKED) UPDATE jobs SET state = 'running', started_at = now() FROM w WHERE jobs.id = w.id RETURNING jobs.*
----
WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n * 2 FROM t WHERE n < 1024) SEARCH BREADTH FIRST BY n SET o SELECT n FROM t ORDER BY o
----
WITH params AS (SELECT $1::int AS tenant, $2::date AS since) SELECT e.* FROM events e, params p WHERE e.tenant_id = p.tenant AND e.day >= p.since
----
WITH RECURSIVE x AS (SELECT 1 AS lvl, ARRAY[id] AS ids FROM roots UNION ALL SELECT lvl + 1, ids || c.id FROM x JOIN children c ON c.parent = x.ids[array_upper(x.ids, 1)]) SELECT * FROM x
----
WITH a AS NOT MATERIALIZED (SELECT random() AS r) SELECT r, r FROM a
----
WITH ins AS (INSERT INTO audit (what) VALUES ('login') RETURNING id, created_at) SELECT id FROM ins
----
WITH u AS (UPDATE accounts SET balance = balance - 100 WHERE id = 1 RETURNING balance), v AS (UPDATE accounts SET balance = balance + 100 WHERE id = 2 RETURNING balance) SELECT (SELECT balance FROM u), (SELECT balance FROM v)
----
WITH RECURSIVE emp_chain AS (
  SELECT id, manager_id FROM staff WHERE id = 77
  UNION
  SELECT s.id, s.manager_id FROM staff s JOIN emp_chain ec ON s.id = ec.manager_id
)
SELECT count(*) - 1 AS levels_above FROM emp_chain
----
WITH old AS (SELECT * FROM prices WHERE valid_to IS NULL AND sku = $1 FOR UPDATE) UPDATE prices p SET valid_to = now() FROM old WHERE p.id = old.id
