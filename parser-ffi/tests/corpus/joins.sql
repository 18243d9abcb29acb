SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.score > 34
----
SELECT u.id, v.id FROM users u JOIN users v ON u.grp = v.grp AND u.score = v.score AND u.id < v.id
----
SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.score > $1
----
SELECT u.id, o.id FROM users u JOIN orders o ON o.tenant_id = u.id
----
SELECT u.id, v.id FROM users u JOIN users v ON u.id = v.id AND u.grp = v.grp
----
SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id = 5 AND o.tenant_id = 5
----
SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id = $1 AND o.tenant_id = $2
----
SELECT u.id, v.id FROM users u JOIN users v ON u.grp = v.grp WHERE u.id = 3 AND v.id = 4
----
SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id = 5
----
SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id IN (1, 3) AND o.tenant_id IN (1, 3)
----
SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.id = 1 AND u.id = 3
----
SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty
----
SELECT * FROM users u, orders o WHERE o.tenant_id = u.id
----
SELECT * FROM users u CROSS JOIN orders o WHERE u.id = o.tenant_id AND o.amount > 3
----
SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id JOIN order_items i ON i.tenant_id = o.tenant_id
----
SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id JOIN order_items i ON i.tenant_id = u.id
----
SELECT * FROM users u, orders o, order_items i WHERE u.id = o.tenant_id AND o.tenant_id = i.tenant_id
----
SELECT * FROM users u, orders o, order_items i, counters k WHERE u.id = o.tenant_id AND i.tenant_id = k.partition_id AND k.partition_id = o.tenant_id
----
SELECT * FROM users u, orders o, order_items i WHERE u.id = o.tenant_id AND o.id = i.order_id
----
SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id AND o.amount > 3 WHERE u.score > 1
----
SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id OR o.amount > 3
----
SELECT * FROM users u JOIN orders o ON NOT (o.tenant_id <> u.id)
----
SELECT * FROM orders o JOIN users u ON true WHERE o.id = 3
----
SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id WHERE u.id = $1
----
SELECT * FROM orders o JOIN order_items i ON i.tenant_id = o.tenant_id AND i.order_id = o.id WHERE o.tenant_id = $1
----
SELECT * FROM users u JOIN orders o ON tenant_id = u.id
----
SELECT * FROM users, orders WHERE id = tenant_id
----
SELECT * FROM users u JOIN stores s ON s.region_id = u.id
----
SELECT * FROM orders o JOIN metrics m ON m.device_id = o.tenant_id
----
SELECT * FROM users u JOIN accounts a ON a.email = u.name
----
SELECT * FROM users u JOIN orders o ON o.id = u.id
----
SELECT * FROM orders JOIN order_items USING (tenant_id)
----
SELECT * FROM orders o JOIN order_items i USING (tenant_id, id)
----
SELECT * FROM orders o JOIN order_items i USING (id)
----
SELECT * FROM users u JOIN orders o USING (id)
----
SELECT * FROM orders NATURAL JOIN order_items
----
SELECT * FROM users NATURAL JOIN orders
----
SELECT * FROM orders JOIN order_items USING (tenant_id) JOIN counters k ON k.partition_id = tenant_id
----
SELECT * FROM users u(id) JOIN orders o ON o.tenant_id = u.id
----
SELECT * FROM orders o JOIN countries c ON c.code = o.country
----
SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id JOIN countries c ON c.code = o.country
----
SELECT * FROM orders o, ref.currencies r, countries c WHERE c.code = o.country
----
SELECT * FROM orders o JOIN pg_class c ON c.relname = 'orders'
----
SELECT * FROM orders o, generate_series(1, 3) g
----
SELECT * FROM orders o CROSS JOIN LATERAL unnest(o.tags) t
----
SELECT * FROM orders o JOIN (VALUES (1), (2)) v(x) ON v.x = o.amount
----
SELECT * FROM orders o JOIN (SELECT * FROM countries) c ON c.code = o.country
----
WITH c AS (SELECT * FROM countries) SELECT * FROM orders o JOIN c ON c.code = o.country
----
SELECT * FROM countries c JOIN ref.currencies r ON r.code = c.currency
----
SELECT * FROM orders o LEFT JOIN countries c ON c.code = o.country
----
SELECT * FROM countries c LEFT JOIN orders o ON o.country = c.code
----
SELECT * FROM orders o RIGHT JOIN countries c ON o.country = c.code
----
SELECT * FROM countries c FULL JOIN orders o ON o.country = c.code
----
SELECT * FROM generate_series(1, 3) g LEFT JOIN orders o ON o.tenant_id = g
----
SELECT * FROM countries c LEFT JOIN orders o ON o.country = c.code AND o.tenant_id = 3
----
SELECT * FROM countries c LEFT JOIN orders o ON o.country = c.code WHERE o.tenant_id = 3
----
SELECT * FROM countries c LEFT JOIN orders o ON o.country = c.code WHERE o.tenant_id = $1
----
SELECT * FROM users u LEFT JOIN orders o ON o.tenant_id = u.id
----
SELECT * FROM orders o LEFT JOIN users u ON u.id = o.tenant_id
----
SELECT * FROM users u RIGHT JOIN orders o ON o.tenant_id = u.id
----
SELECT * FROM users u FULL JOIN orders o ON o.tenant_id = u.id
----
SELECT * FROM users u LEFT JOIN orders o USING (id)
----
SELECT * FROM orders o LEFT JOIN order_items i USING (tenant_id)
----
SELECT * FROM users u LEFT JOIN orders o ON o.tenant_id = u.id AND o.amount > 3
----
SELECT * FROM users u LEFT JOIN orders o ON o.tenant_id = u.id LEFT JOIN order_items i ON i.tenant_id = o.tenant_id AND i.order_id = o.id
----
SELECT * FROM users u LEFT JOIN orders o ON o.grp = u.grp
----
SELECT * FROM users u LEFT JOIN orders o ON o.tenant_id = u.id OR o.amount > 3
----
SELECT * FROM orders o LEFT JOIN order_items i ON i.tenant_id = 3
----
SELECT * FROM orders o LEFT JOIN order_items i ON i.order_id = o.id WHERE o.tenant_id = 3
----
SELECT * FROM orders o LEFT JOIN order_items i ON i.order_id = o.id AND i.tenant_id = o.tenant_id WHERE o.tenant_id = 3
----
SELECT * FROM users u LEFT JOIN orders o ON o.grp = u.grp WHERE o.tenant_id = u.id
----
SELECT * FROM (users u CROSS JOIN orders o) LEFT JOIN order_items i ON i.tenant_id = u.id AND i.tenant_id = o.tenant_id
----
SELECT * FROM users u FULL JOIN (orders o CROSS JOIN order_items i) ON o.tenant_id = u.id AND i.tenant_id = u.id
----
SELECT * FROM (users u CROSS JOIN orders o) LEFT JOIN order_items i ON i.tenant_id = u.id WHERE o.tenant_id = u.id
----
SELECT * FROM (users u JOIN orders o ON o.tenant_id = u.id) LEFT JOIN order_items i ON i.tenant_id = o.tenant_id
----
SELECT * FROM users u LEFT JOIN (orders o CROSS JOIN order_items i) ON i.tenant_id = o.tenant_id AND o.tenant_id = u.id
----
SELECT * FROM users u LEFT JOIN (orders o CROSS JOIN order_items i) ON o.tenant_id = u.id
----
SELECT * FROM users u LEFT JOIN (orders o LEFT JOIN order_items i ON i.order_id = o.id) ON o.tenant_id = u.id AND i.tenant_id = o.tenant_id
----
SELECT * FROM users u LEFT JOIN (orders o LEFT JOIN order_items i ON i.order_id = o.id) ON o.tenant_id = u.id
----
SELECT * FROM users u JOIN (SELECT * FROM orders WHERE amount > 3) o ON o.tenant_id = u.id
----
SELECT * FROM users u JOIN (SELECT o.* FROM orders o) s ON s.tenant_id = u.id
----
SELECT * FROM users u JOIN (SELECT tenant_id AS uid, amount FROM orders) o ON o.uid = u.id
----
SELECT * FROM users u JOIN (SELECT o.tenant_id FROM orders o) s(uid) ON s.uid = u.id
----
SELECT * FROM users u JOIN (SELECT tenant_id, count(*) AS n FROM orders GROUP BY tenant_id) o ON o.tenant_id = u.id WHERE u.id = 3
----
SELECT * FROM users u JOIN (SELECT o.tenant_id, i.amount FROM orders o JOIN order_items i ON i.tenant_id = o.tenant_id) s ON s.tenant_id = u.id
----
SELECT * FROM (SELECT * FROM users) u JOIN (SELECT * FROM orders) o ON o.tenant_id = u.id
----
SELECT * FROM users u JOIN (SELECT amount, tenant_id FROM orders) s(tenant_id, t) ON s.tenant_id = u.id
----
SELECT * FROM users u JOIN (SELECT amount, tenant_id FROM orders) s(a, uid) ON s.uid = u.id
----
SELECT * FROM users u JOIN (SELECT tenant_id + 0 AS tenant_id FROM orders) o ON o.tenant_id = u.id
----
SELECT * FROM users u JOIN (SELECT tenant_id FROM orders UNION ALL SELECT tenant_id FROM order_items) o ON o.tenant_id = u.id
----
SELECT * FROM users u JOIN (SELECT * FROM orders WHERE amount > 3) o ON o.amount = u.score
----
SELECT * FROM users u JOIN (SELECT * FROM orders WHERE tenant_id = 3) o ON o.amount = u.score WHERE u.id = 4
----
SELECT * FROM users u JOIN (SELECT * FROM orders WHERE tenant_id = 3) o ON o.amount = u.score
----
SELECT * FROM (SELECT u.id FROM users u JOIN orders o ON o.amount = u.score) s
----
SELECT count(*) FROM (SELECT u.id FROM users u JOIN orders o ON o.tenant_id = u.id) s
----
WITH o AS (SELECT * FROM orders WHERE amount > 3) SELECT * FROM users u JOIN o ON o.tenant_id = u.id
----
WITH o(uid) AS (SELECT tenant_id FROM orders) SELECT * FROM users u JOIN o ON o.uid = u.id
----
WITH o AS (SELECT * FROM orders) SELECT * FROM users u JOIN o x ON x.tenant_id = u.id
----
WITH o AS (SELECT * FROM orders) SELECT * FROM users u JOIN o ON o.amount = u.score
----
WITH o AS (SELECT * FROM orders WHERE tenant_id = 3) SELECT * FROM o JOIN order_items i ON i.tenant_id = o.tenant_id
----
WITH u AS (SELECT * FROM users u JOIN orders o ON o.amount = u.score) SELECT * FROM u
----
WITH a AS (SELECT * FROM orders), b AS (SELECT * FROM a) SELECT * FROM users u JOIN b ON b.tenant_id = u.id
----
SELECT * FROM users u, LATERAL (SELECT * FROM orders o WHERE o.tenant_id = u.id ORDER BY o.amount DESC LIMIT 3) x
----
SELECT * FROM users u LEFT JOIN LATERAL (SELECT * FROM orders o WHERE o.tenant_id = u.id LIMIT 3) x ON true
----
SELECT * FROM users u JOIN LATERAL (SELECT * FROM orders o WHERE u.id = o.tenant_id) x ON x.amount > 3
----
SELECT * FROM users u, LATERAL (SELECT * FROM orders o WHERE o.amount = u.score) x
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.tenant_id = u.id)
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o JOIN order_items i ON i.order_id = o.id AND i.tenant_id = o.tenant_id WHERE o.tenant_id = u.id)
----
SELECT * FROM countries WHERE code IN (SELECT o.country FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.tenant_id = 3 AND i.tenant_id = 3)
----
SELECT id FROM users UNION ALL SELECT u.id FROM users u JOIN orders o ON o.amount = u.score
----
SELECT u.id FROM users u JOIN orders o ON o.tenant_id = u.id UNION ALL SELECT id FROM users
----
INSERT INTO order_items (tenant_id, order_id) SELECT o.tenant_id, o.id FROM orders o JOIN users u ON u.score = o.amount
----
INSERT INTO order_items (tenant_id, order_id) SELECT o.tenant_id, o.id FROM orders o JOIN users u ON u.id = o.tenant_id
----
UPDATE orders o SET amount = 0 FROM users u WHERE u.id = o.tenant_id AND u.score > 3
----
UPDATE orders o SET amount = 0 FROM users u WHERE u.score = o.amount
----
UPDATE orders o SET amount = 0 FROM users u WHERE u.score = o.amount AND o.tenant_id = 3 AND u.id = 3
----
UPDATE orders o SET amount = 1 FROM order_items i WHERE i.order_id = o.id AND o.tenant_id = 3
----
UPDATE orders o SET amount = 0 FROM countries c WHERE c.code = o.country
----
DELETE FROM orders o USING users u WHERE u.id = o.tenant_id AND u.score < 0
----
DELETE FROM orders o USING users u WHERE u.score = o.amount
----
MERGE INTO orders o USING order_items i ON o.tenant_id = i.tenant_id AND o.id = i.order_id AND o.tenant_id = 3 WHEN MATCHED THEN UPDATE SET amount = 1
----
MERGE INTO orders o USING order_items i ON o.id = i.order_id AND o.tenant_id = 3 WHEN MATCHED THEN UPDATE SET amount = 1
----
MERGE INTO orders o USING (SELECT * FROM order_items WHERE tenant_id = 3) i ON o.id = i.order_id AND o.tenant_id = 3 WHEN MATCHED THEN UPDATE SET amount = 1
----
EXPLAIN SELECT * FROM users u JOIN orders o ON o.amount = u.score
----
COPY (SELECT * FROM users u JOIN orders o ON o.amount = u.score) TO STDOUT
----
SELECT * FROM users u JOIN orders o ON o.amount = u.score FOR UPDATE
----
CREATE VIEW v AS SELECT * FROM users u JOIN orders o ON o.amount = u.score
----
SELECT 1; SELECT * FROM users u JOIN orders o ON o.amount = u.score
----
SELECT * FROM events_p3 JOIN events_p4 USING (id)
----
SELECT * FROM events_p3 e JOIN orders o ON o.id = e.id WHERE o.tenant_id = 3
----
SELECT * FROM events_p3 e JOIN orders o ON o.id = e.id
----
SELECT * FROM events_p3 e JOIN counters k ON k.partition_id = 3
----
SELECT * FROM foo f JOIN bar b ON b.foo_id = f.id
----
SELECT * FROM foo f JOIN orders o ON o.id = f.order_id WHERE o.tenant_id = 3
----
SELECT * FROM invoices i JOIN payments p ON p.customer_id = i.customer_id
----
SELECT * FROM invoices i JOIN payments p USING (customer_id)
----
SELECT * FROM invoices i JOIN payments p ON p.invoice_id = i.id WHERE i.customer_id = 3 AND p.customer_id = 3
----
SELECT * FROM invoices i JOIN payments p ON p.invoice_id = i.id WHERE i.customer_id = 3
----
SELECT * FROM invoices i JOIN orders o ON o.tenant_id = i.customer_id
----
SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id
----
SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id WHERE u.id = 3
----
SELECT * FROM users u JOIN orders o ON o.amount = u.score WHERE u.id = 3
----
SELECT * FROM (orders o JOIN order_items i USING (tenant_id)) AS j WHERE j.tenant_id = 3
----
SELECT * FROM orders o JOIN order_items i USING (tenant_id) AS shared WHERE shared.tenant_id = $1
----
SELECT * FROM orders o NATURAL FULL JOIN order_items i
----
SELECT * FROM orders o NATURAL LEFT JOIN order_items i NATURAL RIGHT JOIN counters c
----
SELECT * FROM a RIGHT JOIN (b LEFT JOIN c ON c.k = b.k) ON a.k = b.k FULL JOIN d USING (k)
----
SELECT * FROM ((a JOIN b ON a.k = b.k) LEFT JOIN (c JOIN d ON c.k = d.k) ON b.k = c.k) RIGHT JOIN e ON e.k = a.k
----
SELECT * FROM a, b LEFT JOIN c ON c.x = b.x, d CROSS JOIN e WHERE a.k = d.k AND (b.k = e.k OR a.k = 1)
----
SELECT * FROM orders o TABLESAMPLE SYSTEM (10) JOIN order_items i ON i.tenant_id = o.tenant_id
----
SELECT * FROM ONLY orders o JOIN public.order_items i ON i.tenant_id = o.tenant_id WHERE o.tenant_id = 3
----
SELECT * FROM "Orders" "O" JOIN "Order Items" i ON i."Tenant" = "O"."Tenant"
----
SELECT * FROM users u, ROWS FROM (generate_series(1, u.id), unnest(u.tags)) AS r(a, b) LEFT JOIN orders o ON o.tenant_id = r.a
----
SELECT * FROM users u LEFT JOIN LATERAL generate_series(1, u.id) g ON true JOIN orders o ON o.tenant_id = u.id
----
SELECT * FROM users u, LATERAL (SELECT o.tenant_id AS uid, i.* FROM orders o JOIN order_items i ON i.tenant_id = o.tenant_id WHERE o.tenant_id = u.id AND i.amount > $1) AS x(a)
----
SELECT * FROM (SELECT * FROM (SELECT * FROM orders WHERE tenant_id = 3) a JOIN order_items b USING (tenant_id)) c JOIN users u ON u.id = c.tenant_id
----
SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(id, name) JOIN users u ON u.id = v.id
----
SELECT * FROM xmltable('/a' PASSING '<a/>' COLUMNS x int) JOIN orders o ON o.tenant_id = x
----
WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT * FROM t JOIN users u ON u.id = t.n
----
WITH a AS (SELECT * FROM orders), b AS (WITH a AS (SELECT * FROM users) SELECT * FROM a) SELECT * FROM a JOIN b ON b.id = a.tenant_id
----
WITH a(x, y) AS (SELECT tenant_id, amount FROM orders) SELECT * FROM a AS z(p) JOIN users u ON u.id = z.p
----
WITH ins AS (INSERT INTO orders (tenant_id) VALUES (3) RETURNING *) SELECT * FROM ins JOIN order_items i ON i.tenant_id = ins.tenant_id
----
WITH m AS MATERIALIZED (SELECT tenant_id FROM orders GROUP BY tenant_id) SELECT * FROM m, users u WHERE u.id = m.tenant_id
----
SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id AND o.id IN (SELECT order_id FROM order_items i WHERE i.tenant_id = u.id)
----
SELECT * FROM users u JOIN orders o ON (o.tenant_id = u.id AND (o.amount = u.score AND o.id = $1))
----
SELECT * FROM users u JOIN orders o ON o.tenant_id::bigint = u.id
----
SELECT * FROM users u JOIN orders o ON u.id = o.tenant_id + 0
----
SELECT * FROM users u JOIN orders o ON ROW(u.id, u.grp) = ROW(o.tenant_id, o.qty)
----
SELECT * FROM users u JOIN orders o ON u.id IS NOT DISTINCT FROM o.tenant_id
----
SELECT * FROM users u JOIN orders o ON o.tenant_id = ANY(ARRAY[u.id])
----
SELECT u.*, o.* FROM public.users AS u INNER JOIN public.orders AS o ON (o.tenant_id = u.id) WHERE u.id = ANY($1)
----
SELECT * FROM users u JOIN (SELECT DISTINCT ON (tenant_id) * FROM orders ORDER BY tenant_id, amount DESC) o ON o.tenant_id = u.id
----
SELECT * FROM users u JOIN (SELECT tenant_id, sum(amount) OVER (PARTITION BY tenant_id) AS s FROM orders) o USING (tenant_id)
----
SELECT * FROM users u JOIN (TABLE orders) o ON o.tenant_id = u.id
----
SELECT * FROM users u JOIN (SELECT * FROM orders LIMIT 10) o ON o.tenant_id = u.id
----
SELECT * FROM users u JOIN (SELECT *, tenant_id AS t2 FROM orders o, order_items) s ON s.t2 = u.id
----
SELECT * FROM users u JOIN (SELECT o.*, 1 FROM orders o JOIN order_items i ON i.tenant_id = o.tenant_id) s(a, b) ON s.a = u.id
----
SELECT * FROM users u JOIN LATERAL (SELECT * FROM orders o WHERE o.tenant_id = u.id UNION ALL SELECT * FROM orders o2 WHERE o2.tenant_id = u.id) x ON true
----
SELECT * FROM users JOIN LATERAL (SELECT * FROM orders WHERE tenant_id = users.id) x ON x.amount > 0
----
UPDATE orders o SET amount = i.amount FROM order_items i JOIN users u ON u.id = i.tenant_id WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id
----
UPDATE orders SET amount = 0 FROM (SELECT tenant_id FROM order_items WHERE amount < 0) AS bad WHERE bad.tenant_id = orders.tenant_id
----
DELETE FROM orders USING order_items i LEFT JOIN users u ON u.id = i.tenant_id WHERE i.order_id = orders.id
----
DELETE FROM orders o USING (SELECT * FROM users) u WHERE u.id = o.tenant_id RETURNING o.*
----
MERGE INTO orders t USING (SELECT o.tenant_id, o.id FROM orders o JOIN order_items i ON i.tenant_id = o.tenant_id) s ON t.tenant_id = s.tenant_id AND t.id = s.id AND t.tenant_id = $1 WHEN MATCHED THEN DELETE
----
MERGE INTO orders t USING order_items s JOIN users u ON u.id = s.tenant_id ON t.tenant_id = s.tenant_id WHEN NOT MATCHED THEN INSERT (tenant_id) VALUES (s.tenant_id)
----
INSERT INTO order_items SELECT i.* FROM order_items i JOIN orders o USING (tenant_id) WHERE o.amount > 3
----
INSERT INTO counters (partition_id) SELECT o.tenant_id FROM orders o LEFT JOIN counters c ON c.partition_id = o.tenant_id WHERE c.partition_id IS NULL
----
EXPLAIN ANALYZE SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id WHERE u.id = 3
----
COPY (SELECT u.id, o.id FROM users u JOIN orders o USING (id)) TO STDOUT
----
CREATE TABLE t AS SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id
----
DECLARE c CURSOR FOR SELECT * FROM users u JOIN orders o ON o.amount = u.score
----
PREPARE p AS SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id WHERE u.id = $1
----
SELECT * FROM users u WHERE u.id IN (SELECT o.tenant_id FROM orders o, order_items i WHERE i.tenant_id = o.tenant_id) AND EXISTS (SELECT 1 FROM a NATURAL JOIN b)
----
SELECT (SELECT count(*) FROM orders o LEFT JOIN order_items i USING (tenant_id) WHERE o.tenant_id = u.id) FROM users u
----
SELECT * FROM events_p1 a JOIN events_p1 b USING ("offset")
----
SELECT * FROM log.part_3 p JOIN log.part_3 q ON p.id = q.id
----
SELECT * FROM events_p3 e JOIN LATERAL (SELECT * FROM counters c WHERE c.partition_id = 3) x ON true
----
SELECT * FROM users u JOIN users v ON v.id = u.id JOIN users w ON w.id = v.id JOIN users x ON x.id = w.id JOIN users y ON y.id = x.id
----
SELECT * FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN orders o ON o.country = n.nspname
----
SELECT * FROM information_schema.tables t JOIN orders o ON o.country = t.table_name
