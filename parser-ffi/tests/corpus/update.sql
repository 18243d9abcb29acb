UPDATE users SET name = 'Alice' WHERE id = 1
----
UPDATE users SET name = $1, email = $2 WHERE id = $3 AND tenant_id = $4
----
UPDATE users SET last_login = now()
----
UPDATE products SET price = price * 1.1, updated_at = DEFAULT WHERE category = 'tools'
----
UPDATE accounts SET (balance, updated_at) = (balance - 50, now()) WHERE id = 10
----
UPDATE accounts SET (balance, status) = (SELECT sum(delta), 'recalc' FROM ledger WHERE ledger.account_id = accounts.id) WHERE accounts.tenant_id = 3
----
UPDATE t SET (a, b, c) = ROW(1, 2, 3)
----
UPDATE t SET (a) = ROW(5) WHERE id = 1
----
UPDATE orders o SET status = 'shipped' FROM shipments s WHERE s.order_id = o.id AND s.shipped_at IS NOT NULL
----
UPDATE orders AS o SET total = x.sum FROM (SELECT order_id, sum(price * qty) AS sum FROM order_items GROUP BY order_id) x WHERE x.order_id = o.id
----
UPDATE employees SET salary = salary * 1.05 FROM departments d JOIN regions r ON r.id = d.region_id WHERE employees.dept_id = d.id AND r.name = 'EMEA'
----
UPDATE films SET kind = 'Dramatic' WHERE CURRENT OF c_films
----
UPDATE users SET active = false WHERE last_login < now() - interval '1 year' RETURNING id, email
----
UPDATE users SET active = false WHERE id = $1 RETURNING *
----
UPDATE counters SET n = n + 1 WHERE name = 'hits' RETURNING n
----
UPDATE counters SET n = n + 1 WHERE name = 'hits' RETURNING OLD.n AS before, NEW.n AS after
----
UPDATE counters SET n = 0 RETURNING WITH (OLD AS prev, NEW AS cur) prev.n, cur.n
----
UPDATE ONLY parent_tbl SET flag = true WHERE id < 100
----
UPDATE settings SET data = data || '{"beta": true}' WHERE tenant_id IN (1, 2, 3)
----
UPDATE tasks SET assignee_id = NULL, status = 'open' WHERE assignee_id = ANY ($1::bigint[])
----
UPDATE tasks SET priority = CASE WHEN due < now() THEN 'high' WHEN due < now() + interval '1 day' THEN 'medium' ELSE priority END
----
UPDATE arr SET vals[2] = 99, vals[5:6] = '{1,2}' WHERE id = 1
----
UPDATE comp SET addr.city = 'Boston', addr.zip = '02110' WHERE id = 3
----
UPDATE t SET c = (SELECT max(c) FROM t2 WHERE t2.id = t.id) WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.id = t.id)
----
UPDATE "Users" SET "Display Name" = upper("Display Name") WHERE "Id" = 5
----
UPDATE public.sessions s SET expires_at = now() + interval '30 minutes' WHERE s.token = $1 AND s.user_id = $2 RETURNING s.expires_at
----
UPDATE items SET qty = qty - 1 WHERE id = 5 AND qty > 0 RETURNING qty
----
UPDATE log_counters SET next_offset = next_offset + 100 WHERE partition_id = 4 RETURNING next_offset - 100 AS start_offset
----
UPDATE jobs SET state = 'done', finished_at = clock_timestamp(), result = $2 WHERE id = $1 AND state = 'running'
----
UPDATE users SET tenant_id = 2 WHERE tenant_id = 1 AND user_id IN (10, 11, 12)
----
UPDATE users SET email = lower(email) WHERE user_id = 5 OR user_id = 6 OR user_id = 7
----
UPDATE documents SET topic_id = $1::int WHERE topic_id = $2::int AND id = ANY($3)
----
UPDATE t1 SET a = t2.a FROM t2, t3 WHERE t1.id = t2.id AND t2.id = t3.id AND t3.ok
----
UPDATE products SET tags = array_append(tags, 'sale') WHERE NOT ('sale' = ANY (tags))
----
UPDATE subs SET plan = 'free' WHERE user_id IN (SELECT id FROM users WHERE tenant_id = $1) RETURNING user_id, plan
----
UPDATE t SET x = DEFAULT, y = DEFAULT
----
UPDATE t SET (x, y) = (DEFAULT, 1)
----
UPDATE queue SET locked_by = $1, locked_at = now() WHERE id = (SELECT id FROM queue WHERE locked_by IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, payload
----
UPDATE big AS b SET v = v + 1 WHERE b.k BETWEEN 1000 AND 2000
----
UPDATE inventory i SET qty = i.qty - o.qty FROM (VALUES ('A', 1), ('B', 3)) AS o(sku, qty) WHERE i.sku = o.sku
----
UPDATE prefs SET data = jsonb_set(data, '{notifications,email}', 'false') WHERE user_id = $1::bigint
----
UPDATE t SET ts = ts AT TIME ZONE 'UTC' WHERE ts IS NOT NULL
----
UPDATE wallets SET balance = balance + $2::numeric WHERE user_id = $1::bigint AND tenant_id = $3::int RETURNING balance
----
UPDATE msg.consumer_offsets SET committed_offset = $3, updated_at = now() WHERE group_id = $1 AND partition_id = $2
----
UPDATE accounts SET balance = balance - 10 WHERE CURRENT OF acct_cursor RETURNING balance
----
UPDATE posts SET view_count = view_count + 1, last_viewed_at = now() WHERE id = 77 AND tenant_id = 3
----
UPDATE a SET v = b.v FROM b LEFT JOIN c ON c.id = b.c_id WHERE a.id = b.a_id AND c.id IS NULL
----
UPDATE users SET name = NULL WHERE name = ''
----
UPDATE orders SET note = note || E'\n' || $1 WHERE id = $2
----
UPDATE t SET a = 1 WHERE id = 1 RETURNING a, a + 1 AS next, 'const' AS c
