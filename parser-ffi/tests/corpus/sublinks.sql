SELECT id FROM users WHERE grp = (SELECT grp FROM users WHERE id = 1664081458) AND score > 921
----
SELECT id FROM users WHERE grp = (SELECT grp FROM users WHERE id = $1) AND score > $2
----
SELECT id, score FROM users WHERE id = 736124275 AND score >= (SELECT avg(score) FROM users WHERE grp = 8)
----
SELECT id, score FROM users WHERE id = $1 AND score >= (SELECT avg(score) FROM users WHERE grp = $2)
----
SELECT id FROM users WHERE id = 3 AND grp = (SELECT grp FROM users WHERE id = 4)
----
SELECT id FROM users WHERE id = $1 AND grp = (SELECT grp FROM users WHERE id = $1)
----
SELECT id FROM users WHERE id = $1 AND grp = (SELECT grp FROM users WHERE id = $2)
----
SELECT id FROM users u WHERE score >= (SELECT avg(score) FROM users v WHERE v.id = u.id)
----
SELECT EXISTS (SELECT 1 FROM users WHERE id = 42)
----
SELECT (SELECT count(*) FROM orders WHERE tenant_id = $1)
----
SELECT ARRAY(SELECT id FROM users WHERE id = 3)
----
SELECT * FROM countries WHERE code IN (SELECT country FROM orders WHERE tenant_id = 42)
----
SELECT (SELECT name FROM users WHERE id = 3), (SELECT count(*) FROM orders WHERE tenant_id = 4)
----
SELECT (SELECT name FROM users WHERE id = 1), (SELECT count(*) FROM orders WHERE tenant_id = 3)
----
SELECT (SELECT count(*) FROM users WHERE id IN (1, 3))
----
SELECT * FROM orders WHERE tenant_id = 3 AND amount > (SELECT avg(amount) FROM order_items WHERE tenant_id = 3)
----
SELECT * FROM orders WHERE tenant_id IN (3, 4) AND amount > (SELECT avg(amount) FROM order_items WHERE tenant_id = 5)
----
SELECT * FROM orders WHERE tenant_id = $1 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = $2)
----
SELECT * FROM orders WHERE tenant_id = 1 AND tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)
----
SELECT * FROM orders WHERE id IN (SELECT order_id FROM order_items WHERE tenant_id = 1 AND tenant_id = 3)
----
UPDATE orders SET amount = (SELECT max(amount) FROM order_items WHERE tenant_id = $1) WHERE tenant_id = $1
----
DELETE FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)
----
INSERT INTO orders (tenant_id, amount) VALUES (3, (SELECT max(amount) FROM order_items WHERE tenant_id = 3))
----
INSERT INTO orders (tenant_id, amount) VALUES (42, (SELECT max(amount) FROM order_items WHERE tenant_id = 3))
----
INSERT INTO orders (tenant_id, amount) VALUES (3, (SELECT max(amount) FROM order_items))
----
INSERT INTO orders (id) VALUES ((SELECT max(order_id) FROM order_items WHERE tenant_id = 3))
----
INSERT INTO orders (tenant_id, id) VALUES (1, (SELECT 1 FROM countries)), (3, 2)
----
SELECT * FROM events_p3 WHERE id IN (SELECT id FROM events_p4)
----
SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT id FROM events_p3)
----
SELECT * FROM orders WHERE id IN (SELECT id FROM events_p3)
----
SELECT (SELECT max("offset") FROM events_p42)
----
WITH i AS (SELECT * FROM order_items WHERE tenant_id = 3) SELECT * FROM countries WHERE code IN (SELECT country FROM i)
----
WITH i AS (SELECT * FROM order_items WHERE tenant_id = 3) SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM i)
----
SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM (SELECT * FROM order_items WHERE tenant_id = 3) i)
----
SELECT * FROM (SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)) s
----
SELECT * FROM (SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 1)) s
----
SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)
----
SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id)
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id)
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE u.id = o.tenant_id AND o.amount > 5)
----
SELECT * FROM users u WHERE NOT EXISTS (SELECT 1 FROM orders WHERE tenant_id = u.id)
----
SELECT * FROM users WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = users.id)
----
SELECT u.id, (SELECT count(*) FROM orders o WHERE o.tenant_id = u.id) FROM users u
----
SELECT u.id, (SELECT sum(i.amount) FROM orders o JOIN order_items i ON i.tenant_id = o.tenant_id AND i.order_id = o.id WHERE o.tenant_id = u.id) FROM users u
----
SELECT * FROM users u WHERE u.id = $1 AND u.score > (SELECT avg(amount) FROM orders o WHERE o.tenant_id = u.id)
----
SELECT * FROM orders o WHERE o.tenant_id IN (1, 3) AND o.amount > ALL (SELECT amount FROM order_items i WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id)
----
SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id WHERE o.id IN (SELECT order_id FROM order_items i WHERE i.tenant_id = o.tenant_id)
----
SELECT * FROM invoices v WHERE EXISTS (SELECT 1 FROM payments p WHERE p.customer_id = v.customer_id)
----
UPDATE orders o SET amount = (SELECT sum(amount) FROM order_items i WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id)
----
DELETE FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id)
----
INSERT INTO order_items (tenant_id, order_id) SELECT tenant_id, id FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id)
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id AND EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id))
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id AND o.id IN (SELECT order_id FROM order_items))
----
SELECT * FROM countries c WHERE c.code IN (SELECT country FROM orders o WHERE o.tenant_id = 3 AND EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id))
----
SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id)
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.grp)
----
SELECT * FROM accounts a WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = a.email)
----
SELECT * FROM stores s WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = s.region_id)
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id OR o.amount > 5)
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM countries c LEFT JOIN orders o ON o.tenant_id = u.id)
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id UNION ALL SELECT 1 FROM orders)
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o, users u WHERE o.tenant_id = u.id)
----
SELECT * FROM (SELECT id + 1 AS id FROM users) u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id)
----
SELECT * FROM users x, (SELECT id + 1 AS id FROM users) u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id)
----
SELECT * FROM users u, coalesce(1) WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id)
----
SELECT * FROM users u, generate_series(1, 2) WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = u.id)
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM (SELECT tenant_id FROM orders) o WHERE o.tenant_id = u.id)
----
WITH o AS (SELECT * FROM orders) SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM o WHERE o.tenant_id = u.id)
----
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE tenant_id = id)
----
SELECT * FROM countries c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.tenant_id = c.id)
----
SELECT * FROM users WHERE grp IN (SELECT grp FROM users WHERE score > 5)
----
SELECT * FROM orders WHERE amount > (SELECT avg(amount) FROM orders)
----
SELECT * FROM countries WHERE code IN (SELECT country FROM orders)
----
SELECT * FROM foo WHERE x IN (SELECT x FROM bar)
----
SELECT * FROM orders o JOIN order_items i ON i.tenant_id = o.tenant_id AND i.amount > (SELECT avg(amount) FROM order_items)
----
SELECT tenant_id, count(*) FROM orders GROUP BY tenant_id HAVING count(*) > (SELECT count(*) FROM users)
----
SELECT * FROM orders ORDER BY (SELECT max(id) FROM users)
----
UPDATE orders SET amount = (SELECT avg(amount) FROM order_items) WHERE tenant_id = 3
----
DELETE FROM orders WHERE id NOT IN (SELECT order_id FROM order_items)
----
WITH t AS (SELECT id FROM users) SELECT * FROM countries WHERE code IN (SELECT id FROM t)
----
EXPLAIN SELECT * FROM users WHERE grp IN (SELECT grp FROM users)
----
COPY (SELECT * FROM users WHERE grp IN (SELECT grp FROM users)) TO STDOUT
----
SELECT * FROM orders WHERE country IN (SELECT code FROM countries WHERE name LIKE 'F%')
----
SELECT * FROM orders WHERE tenant_id = 3 AND country IN (SELECT code FROM ref.currencies)
----
SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relname = 'orders')
----
SELECT * FROM orders WHERE id = (SELECT 1)
----
SELECT (SELECT 1), (SELECT code FROM countries LIMIT 1)
----
INSERT INTO orders (tenant_id, country) VALUES ($1, (SELECT code FROM countries WHERE name = $2))
----
WITH c AS (SELECT * FROM countries) SELECT * FROM orders WHERE tenant_id = 3 AND country IN (SELECT code FROM c)
----
CREATE VIEW big_orders AS SELECT * FROM orders WHERE amount > (SELECT avg(amount) FROM orders)
----
SELECT * FROM orders WHERE id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)
----
SELECT * FROM orders WHERE tenant_id = 3 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 4)
----
SELECT * FROM orders WHERE tenant_id = 1 AND id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)
----
SELECT * FROM (SELECT * FROM orders WHERE tenant_id = 3) s
----
SELECT * FROM (SELECT * FROM orders WHERE tenant_id = $1) s WHERE s.amount > 5
----
SELECT * FROM (SELECT * FROM orders) s WHERE s.tenant_id = 3
----
WITH o AS (SELECT * FROM orders WHERE tenant_id = 3) SELECT * FROM o
----
WITH o AS (SELECT * FROM orders WHERE tenant_id = 3) SELECT * FROM o JOIN order_items i ON i.order_id = o.id
----
WITH o AS (SELECT * FROM orders) SELECT * FROM o WHERE o.tenant_id = 3
----
WITH o AS (SELECT * FROM orders) SELECT * FROM o
----
SELECT (SELECT count(*) FROM order_items i WHERE i.tenant_id = 3 AND i.order_id = o.id) FROM orders o WHERE o.tenant_id = 3
----
SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id) AND o.tenant_id = $1
----
SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM order_items i WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id) AND o.tenant_id = $1
----
SELECT * FROM countries WHERE code IN (SELECT country FROM orders WHERE tenant_id = 3)
----
WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT * FROM t
----
SELECT * FROM orders WHERE tenant_id = 3 OR id IN (SELECT id FROM orders WHERE tenant_id = 4)
----
SELECT o.*, (SELECT count(*) FROM order_items i WHERE i.tenant_id = 3) FROM orders o
----
SELECT (SELECT max(amount) FROM orders WHERE tenant_id = 3)
----
SELECT * FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id AND i.tenant_id = 3)
----
SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM order_items WHERE tenant_id = 3)
----
SELECT * FROM orders WHERE amount > ALL (SELECT amount FROM order_items WHERE tenant_id = 3)
----
SELECT * FROM orders o LEFT JOIN (SELECT * FROM order_items WHERE tenant_id = 3) i ON i.order_id = o.id
----
SELECT * FROM orders o LEFT JOIN LATERAL (SELECT * FROM order_items i WHERE i.order_id = o.id AND i.tenant_id = 3) i ON true
----
WITH i AS (SELECT * FROM order_items WHERE tenant_id = 3) SELECT * FROM orders o LEFT JOIN i ON i.order_id = o.id
----
WITH i AS (SELECT * FROM order_items WHERE tenant_id = 3) SELECT * FROM orders WHERE id IN (SELECT order_id FROM i)
----
WITH i AS (SELECT tenant_id FROM order_items WHERE tenant_id = 3) SELECT tenant_id FROM i UNION ALL SELECT tenant_id FROM orders
----
SELECT * FROM orders o LEFT JOIN (SELECT * FROM order_items WHERE tenant_id = 4) i ON i.order_id = o.id WHERE o.tenant_id = 3
----
SELECT * FROM (SELECT * FROM order_items WHERE tenant_id = 3) i LEFT JOIN orders o ON i.order_id = o.id
----
WITH i AS (SELECT * FROM order_items WHERE tenant_id = 3) SELECT * FROM i JOIN orders o ON o.id = i.order_id
----
SELECT * FROM (SELECT * FROM orders WHERE tenant_id = 1 UNION SELECT * FROM orders WHERE tenant_id = 2) o WHERE o.amount > 5
----
WITH u AS (UPDATE order_items SET amount = 1 WHERE tenant_id = 3 RETURNING order_id) UPDATE orders SET amount = 2 WHERE tenant_id = 3 AND id IN (SELECT order_id FROM u)
----
UPDATE countries c SET n = (SELECT count(*) FROM orders o WHERE o.country = c.code)
----
DELETE FROM countries WHERE code NOT IN (SELECT country FROM orders WHERE tenant_id = 3)
----
INSERT INTO countries (code) SELECT 'fr' WHERE NOT EXISTS (SELECT 1 FROM countries WHERE code = 'fr')
----
INSERT INTO orders (tenant_id, country) VALUES (3, (SELECT id FROM countries WHERE code = 'fr'))
----
UPDATE orders SET amount = (SELECT max(amount) FROM order_items WHERE tenant_id = 3) WHERE tenant_id = 3
----
DELETE FROM orders WHERE id IN (SELECT order_id FROM order_items WHERE tenant_id = 3)
----
COPY (SELECT * FROM orders WHERE tenant_id = 3) TO STDOUT
----
COPY (SELECT * FROM orders) TO STDOUT WITH (FORMAT binary)
----
CREATE TABLE IF NOT EXISTS orders_archive (LIKE orders)
----
DROP TABLE IF EXISTS orders, order_items CASCADE
----
CREATE SCHEMA IF NOT EXISTS app
----
SELECT * FROM t WHERE EXISTS (WITH x AS (SELECT * FROM u) SELECT 1 FROM x, xmltable('/a' PASSING '<a/>' COLUMNS y int) WHERE x.k = t.k)
----
SELECT * FROM t WHERE k IN (SELECT k FROM u TABLESAMPLE SYSTEM (10) WHERE u.k = t.k)
----
SELECT * FROM t, JSON_TABLE('[1]', '$[*]' COLUMNS (a int PATH '$')) WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)
----
SELECT * FROM t, ROWS FROM (generate_series(1, 2), unnest(ARRAY[1])) WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)
----
SELECT * FROM t, current_date WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)
----
SELECT (SELECT 1 FROM a WHERE a.k = (SELECT max(k) FROM b WHERE b.k = (SELECT min(k) FROM c WHERE c.k = t.k))) FROM t
----
SELECT * FROM t WHERE (SELECT a FROM u LIMIT 1) IN (SELECT b FROM v WHERE v.k = t.k)
----
MERGE INTO t USING u ON t.k = u.k WHEN MATCHED AND EXISTS (SELECT 1 FROM w WHERE w.k = t.k) THEN UPDATE SET v = (SELECT max(v) FROM x WHERE x.k = 1)
----
INSERT INTO t (k, v) SELECT k, v FROM u WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.k = u.k) ON CONFLICT (k) DO UPDATE SET v = (SELECT 1 FROM w)
----
WITH RECURSIVE a AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM a WHERE n < (SELECT count(*) FROM b)), c AS (SELECT * FROM a) SELECT * FROM c WHERE n IN (SELECT n FROM a JOIN d ON d.k = c.n)
----
SELECT * FROM t WHERE k = ANY (ARRAY(SELECT k FROM u WHERE u.k IN (1, 2)))
----
SELECT * FROM t LEFT JOIN LATERAL (SELECT * FROM u WHERE u.k = t.k AND u.v > (SELECT avg(v) FROM u u2 WHERE u2.k = t.k)) s ON true
----
CALL p((SELECT max(k) FROM t))
----
SELECT * FROM t WHERE a > ALL (SELECT a FROM u WHERE u.k = t.k) GROUP BY a HAVING count(*) > (SELECT count(*) FROM w) ORDER BY (SELECT 1) LIMIT (SELECT 5)
