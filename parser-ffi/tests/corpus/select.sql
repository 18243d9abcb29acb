SELECT 1
----
SELECT * FROM users
----
SELECT id, email FROM users WHERE tenant_id = 1
----
SELECT id, email FROM public.users WHERE tenant_id = $1
----
SELECT u.id, u.name AS user_name, o.total FROM users u JOIN orders o ON o.user_id = u.id WHERE u.tenant_id = 42
----
SELECT u.id, o.id FROM users AS u INNER JOIN orders AS o ON u.id = o.user_id AND o.tenant_id = u.tenant_id
----
SELECT c.name, p.title FROM customers c LEFT JOIN purchases p ON p.customer_id = c.id
----
SELECT c.name, p.title FROM customers c LEFT OUTER JOIN purchases p ON p.customer_id = c.id AND p.status <> 'void'
----
SELECT a.x, b.y FROM alpha a RIGHT JOIN beta b ON a.k = b.k
----
SELECT a.x, b.y FROM alpha a RIGHT OUTER JOIN beta b ON a.k = b.k WHERE b.y IS NOT NULL
----
SELECT coalesce(a.id, b.id) AS id FROM left_side a FULL JOIN right_side b ON a.id = b.id
----
SELECT * FROM left_side a FULL OUTER JOIN right_side b USING (id, region)
----
SELECT * FROM colors CROSS JOIN sizes
----
SELECT * FROM colors, sizes, materials WHERE materials.kind = 'cotton'
----
SELECT * FROM employees NATURAL JOIN departments
----
SELECT * FROM employees NATURAL LEFT JOIN departments
----
SELECT * FROM employees NATURAL RIGHT OUTER JOIN offices
----
SELECT * FROM employees NATURAL FULL JOIN contractors
----
SELECT * FROM orders JOIN order_items USING (order_id)
----
SELECT order_id, sku FROM orders JOIN order_items USING (order_id, tenant_id) WHERE tenant_id = 7
----
SELECT * FROM orders o JOIN order_items i USING (order_id) AS joined WHERE joined.order_id > 100
----
SELECT u.id, recent.created_at FROM users u CROSS JOIN LATERAL (SELECT created_at FROM logins l WHERE l.user_id = u.id ORDER BY created_at DESC LIMIT 1) recent
----
SELECT u.id, x.cnt FROM users u LEFT JOIN LATERAL (SELECT count(*) AS cnt FROM posts p WHERE p.author_id = u.id) x ON true
----
SELECT t.id, g.n FROM tasks t, LATERAL generate_series(1, t.repeat_count) AS g(n)
----
SELECT p.id, tag FROM posts p, LATERAL unnest(p.tags) AS tag WHERE tag LIKE 'rust%'
----
SELECT * FROM a JOIN b ON a.id = b.a_id JOIN c ON c.b_id = b.id LEFT JOIN d ON d.c_id = c.id
----
SELECT * FROM (a JOIN b ON a.id = b.a_id) LEFT JOIN (c JOIN d ON c.id = d.c_id) ON b.id = c.b_id
----
SELECT * FROM t1 JOIN t2 ON t1.a = t2.a AND t1.b < t2.b OR t1.c IS NULL
----
SELECT e.name, m.name AS manager FROM employees e LEFT JOIN employees m ON m.id = e.manager_id
----
SELECT * FROM (SELECT id, total FROM orders WHERE total > 100) big_orders
----
SELECT sub.user_id, sub.n FROM (SELECT user_id, count(*) AS n FROM events GROUP BY user_id) AS sub WHERE sub.n > 10
----
SELECT * FROM (SELECT 1 AS a, 'x' AS b) AS t(c1, c2)
----
SELECT * FROM (SELECT * FROM (SELECT * FROM (SELECT 42 AS answer) i1) i2) i3
----
SELECT name FROM products WHERE price > (SELECT avg(price) FROM products)
----
SELECT name, (SELECT count(*) FROM reviews r WHERE r.product_id = p.id) AS review_count FROM products p
----
SELECT id, (SELECT max(created_at) FROM comments c WHERE c.post_id = posts.id) AS last_comment FROM posts
----
SELECT * FROM accounts a WHERE EXISTS (SELECT 1 FROM transactions t WHERE t.account_id = a.id AND t.amount > 1000)
----
SELECT * FROM accounts a WHERE NOT EXISTS (SELECT FROM transactions t WHERE t.account_id = a.id)
----
SELECT * FROM users WHERE id IN (SELECT user_id FROM admins)
----
SELECT * FROM users WHERE id NOT IN (SELECT user_id FROM banned WHERE banned_until > now())
----
SELECT * FROM users WHERE tenant_id IN (1, 2, 3, 5, 8, 13)
----
SELECT * FROM users WHERE tenant_id NOT IN ($1, $2, $3)
----
SELECT * FROM items WHERE price > ANY (SELECT price FROM competitor_items)
----
SELECT * FROM items WHERE price >= ALL (SELECT price FROM items WHERE category = 'toys')
----
SELECT * FROM items WHERE category = SOME (SELECT name FROM featured_categories)
----
SELECT * FROM users WHERE user_id = ANY ($1::bigint[])
----
SELECT * FROM users WHERE user_id <> ALL (ARRAY[1, 2, 3])
----
SELECT * FROM users WHERE (tenant_id, user_id) IN (SELECT tenant_id, user_id FROM sessions)
----
SELECT * FROM users WHERE (tenant_id, user_id) IN ((1, 10), (1, 11), (2, 20))
----
SELECT id FROM a UNION SELECT id FROM b
----
SELECT id FROM a UNION ALL SELECT id FROM b UNION ALL SELECT id FROM c
----
SELECT email FROM customers INTERSECT SELECT email FROM newsletter
----
SELECT email FROM customers INTERSECT ALL SELECT email FROM newsletter
----
SELECT email FROM customers EXCEPT SELECT email FROM unsubscribed
----
SELECT email FROM customers EXCEPT ALL SELECT email FROM unsubscribed
----
(SELECT id FROM a ORDER BY id LIMIT 5) UNION (SELECT id FROM b ORDER BY id DESC LIMIT 5) ORDER BY 1
----
SELECT 1 UNION SELECT 2 INTERSECT SELECT 3 EXCEPT SELECT 4
----
SELECT x FROM t1 UNION DISTINCT SELECT x FROM t2
----
(SELECT a FROM t1 EXCEPT SELECT a FROM t2) UNION ALL (SELECT a FROM t2 EXCEPT SELECT a FROM t1)
----
SELECT region, count(*) FROM sales GROUP BY region
----
SELECT region, product, sum(amount) FROM sales GROUP BY region, product HAVING sum(amount) > 1000
----
SELECT region, product, sum(amount) FROM sales GROUP BY ROLLUP (region, product)
----
SELECT region, product, sum(amount) FROM sales GROUP BY CUBE (region, product)
----
SELECT region, product, channel, sum(amount) FROM sales GROUP BY GROUPING SETS ((region, product), (region), (channel), ())
----
SELECT region, product, GROUPING(region, product) AS g, sum(amount) FROM sales GROUP BY ROLLUP (region, product) ORDER BY g
----
SELECT year, quarter, month, sum(revenue) FROM finance GROUP BY year, ROLLUP (quarter, month)
----
SELECT a, b, c, count(*) FROM t GROUP BY DISTINCT ROLLUP (a, b), ROLLUP (a, c)
----
SELECT a, b, count(*) FROM t GROUP BY ALL a, b
----
SELECT a, b, c FROM t GROUP BY CUBE ((a, b), c)
----
SELECT a, b FROM t GROUP BY GROUPING SETS (a, ROLLUP (b, c), CUBE (d))
----
SELECT department, avg(salary) FROM employees GROUP BY department HAVING avg(salary) > 50000 AND count(*) >= 3
----
SELECT count(*) FROM logs HAVING count(*) > 0
----
SELECT 1 + 1 AS two GROUP BY 1
----
SELECT DISTINCT country FROM customers
----
SELECT DISTINCT ON (customer_id) customer_id, order_date, total FROM orders ORDER BY customer_id, order_date DESC
----
SELECT DISTINCT ON (tenant_id, user_id) * FROM audit_log ORDER BY tenant_id, user_id, ts DESC
----
SELECT ALL name FROM pets
----
SELECT * FROM scores ORDER BY points DESC NULLS LAST
----
SELECT * FROM scores ORDER BY points ASC NULLS FIRST, player
----
SELECT * FROM scores ORDER BY points USING >
----
SELECT * FROM scores ORDER BY player USING ~<~ NULLS LAST
----
SELECT * FROM events ORDER BY created_at DESC LIMIT 10
----
SELECT * FROM events ORDER BY created_at DESC LIMIT 10 OFFSET 20
----
SELECT * FROM events ORDER BY id OFFSET 100
----
SELECT * FROM events ORDER BY id LIMIT ALL
----
SELECT * FROM events ORDER BY id OFFSET 5 ROWS FETCH FIRST 10 ROWS ONLY
----
SELECT * FROM events ORDER BY id FETCH NEXT 1 ROW ONLY
----
SELECT * FROM leaderboard ORDER BY score DESC FETCH FIRST 3 ROWS WITH TIES
----
SELECT * FROM leaderboard ORDER BY score DESC OFFSET 1 ROW FETCH FIRST 5 ROW WITH TIES
----
SELECT * FROM events ORDER BY id LIMIT $1 OFFSET $2
----
SELECT * FROM events FETCH FIRST ROW ONLY
----
VALUES (1, 'one'), (2, 'two'), (3, 'three')
----
VALUES (1, 'a') ORDER BY 1 DESC LIMIT 1
----
SELECT * FROM (VALUES (1, 'red'), (2, 'green'), (3, 'blue')) AS colors(id, name)
----
SELECT v.k, t.val FROM (VALUES ('a', 1), ('b', 2)) v(k, n) JOIN things t ON t.key = v.k
----
SELECT * FROM big_table TABLESAMPLE SYSTEM (10)
----
SELECT * FROM big_table TABLESAMPLE BERNOULLI (2.5) REPEATABLE (42)
----
SELECT count(*) FROM big_table AS b TABLESAMPLE SYSTEM (0.1) WHERE b.flag
----
TABLE users
----
TABLE ONLY accounts
----
SELECT * FROM ONLY parent_table WHERE id = 5
----
SELECT * FROM parent_table * WHERE id = 5
----
SELECT * FROM generate_series(1, 10) AS s(i)
----
SELECT * FROM generate_series('2024-01-01'::date, '2024-12-31'::date, interval '1 month') WITH ORDINALITY AS t(d, n)
----
SELECT * FROM ROWS FROM (generate_series(1, 3), unnest(ARRAY['a', 'b'])) AS x(num, letter)
----
SELECT * FROM unnest(ARRAY[1, 2, 3], ARRAY['x', 'y', 'z']) AS u(num, ch)
----
SELECT * FROM json_to_record('{"a":1,"b":"x"}') AS r(a int, b text)
----
SELECT * FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = ANY ('{r,p}')
----
SELECT now(), current_date, current_time, current_timestamp, localtime, localtimestamp
----
SELECT current_user, session_user, user, current_role, current_catalog, current_schema
----
SELECT version()
----
SELECT count(*) AS total, count(DISTINCT user_id) AS users FROM page_views WHERE tenant_id = 3
----
SELECT string_agg(name, ', ' ORDER BY name) FROM tags WHERE post_id = 9
----
SELECT array_agg(DISTINCT category ORDER BY category DESC) FROM products
----
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) FROM requests
----
SELECT mode() WITHIN GROUP (ORDER BY browser) AS top_browser FROM visits
----
SELECT percentile_disc(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY amount) FROM payments
----
SELECT rank(100) WITHIN GROUP (ORDER BY score DESC) FROM exam_results
----
SELECT count(*) FILTER (WHERE status = 'open') AS open_count, count(*) FILTER (WHERE status = 'closed') AS closed_count FROM tickets
----
SELECT sum(amount) FILTER (WHERE kind = 'credit') - sum(amount) FILTER (WHERE kind = 'debit') AS balance FROM ledger WHERE account_id = $1
----
SELECT * FROM users u WHERE u.tenant_id = 5 AND (u.deleted_at IS NULL OR u.deleted_at > now())
----
SELECT * FROM orders WHERE tenant_id = 1 OR tenant_id = 2 OR tenant_id = 3
----
SELECT * FROM orders WHERE user_id = $1::bigint AND created_at >= $2::timestamptz
----
SELECT * FROM orders WHERE tenant_id = '17'::int
----
SELECT * FROM orders WHERE CAST(tenant_id AS text) = '17'
----
SELECT * FROM orders WHERE tenant_id IN (SELECT id FROM tenants WHERE plan = 'enterprise') AND total > 0
----
SELECT * FROM documents WHERE topic_id = 99 ORDER BY updated_at DESC NULLS LAST LIMIT 50
----
SELECT * FROM x WHERE NOT (a = 1 AND b = 2) OR c
----
SELECT t.* FROM t WHERE t.a IS TRUE AND t.b IS NOT FALSE AND t.c IS UNKNOWN
----
SELECT * FROM products WHERE name ILIKE '%widget%' AND sku NOT LIKE 'TMP-%'
----
SELECT "Id", "User Name" FROM "Weird Table" WHERE "Weird Table"."Id" > 0
----
SELECT a.b.c.d FROM a.b.c
----
SELECT 'hello' AS greeting, 42 AS answer, 3.14 AS pi, true AS flag, NULL AS nothing
----
SELECT name AS "select", id AS "from" FROM keywords
----
SELECT users.* , orders.id AS order_id FROM users, orders WHERE users.id = orders.user_id
----
SELECT (t).a, (t).b FROM (SELECT ROW(1, 2)::pair AS t) s
----
SELECT (compute_stats(x)).* FROM samples
----
SELECT * FROM t1 WHERE a = (SELECT a FROM t2 WHERE t2.id = t1.id LIMIT 1)
----
SELECT ARRAY(SELECT id FROM children WHERE parent_id = p.id ORDER BY id) AS child_ids FROM parents p
----
SELECT * FROM logs WHERE ts BETWEEN '2024-01-01' AND '2024-02-01' AND level IN ('error', 'fatal')
----
SELECT * INTO TEMP recent_orders FROM orders WHERE created_at > now() - interval '1 day'
----
SELECT id, name INTO UNLOGGED TABLE archive_users FROM users WHERE active = false
----
SELECT * FROM orders o WHERE o.user_id IN (SELECT u.id FROM users u WHERE u.tenant_id = o.tenant_id AND EXISTS (SELECT 1 FROM flags f WHERE f.user_id = u.id))
----
SELECT count(*) FROM (SELECT DISTINCT user_id FROM events WHERE tenant_id = $1) d
----
SELECT shop_id, date_trunc('day', created_at) AS day, count(*) FROM orders GROUP BY shop_id, 2 ORDER BY 2, 1
----
SELECT * FROM accounts WHERE balance < 0 ORDER BY balance LIMIT 1 OFFSET 0
----
SELECT * FROM things WHERE id = 1 FOR READ ONLY
----
SELECT x, y FROM points WHERE point(x, y) <@ box '((0,0),(10,10))'
----
SELECT * FROM a LEFT JOIN b ON true RIGHT JOIN c ON false
----
SELECT * FROM t1 AS x (p, q) JOIN t2 AS y (p, r) USING (p)
----
SELECT p.name FROM people p WHERE p.age > ALL (VALUES (18), (21))
----
SELECT 1 WHERE false
----
SELECT
