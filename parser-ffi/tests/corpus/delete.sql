DELETE FROM users WHERE id = 1
----
DELETE FROM users WHERE id = $1 AND tenant_id = $2
----
DELETE FROM sessions
----
DELETE FROM sessions WHERE expires_at < now() RETURNING id
----
DELETE FROM sessions WHERE expires_at < now() RETURNING *
----
DELETE FROM ONLY parent_tbl WHERE created_at < '2000-01-01'
----
DELETE FROM orders o USING customers c WHERE o.customer_id = c.id AND c.status = 'deleted'
----
DELETE FROM order_items USING orders, customers WHERE order_items.order_id = orders.id AND orders.customer_id = customers.id AND customers.region = 'APAC'
----
DELETE FROM films WHERE CURRENT OF c_tasks
----
DELETE FROM tasks WHERE status = 'done' AND completed_at < now() - interval '90 days' RETURNING id, title
----
DELETE FROM tasks AS t WHERE t.id IN (SELECT id FROM tasks WHERE project_id = 4 ORDER BY id LIMIT 100)
----
DELETE FROM queue WHERE id = (SELECT id FROM queue ORDER BY priority DESC, id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING *
----
DELETE FROM tags WHERE NOT EXISTS (SELECT 1 FROM post_tags pt WHERE pt.tag_id = tags.id)
----
DELETE FROM user_roles WHERE user_id = ANY ($1::bigint[]) AND role_id = $2
----
DELETE FROM events WHERE tenant_id IN (4, 5, 6) AND created_at < $1::timestamptz
----
DELETE FROM events WHERE tenant_id = 4 OR tenant_id = 8
----
DELETE FROM "Audit Log" WHERE "Created At" < now() - '1 year'::interval
----
DELETE FROM public.carts c USING public.users u WHERE c.user_id = u.id AND u.tenant_id = $1 RETURNING c.id, u.email
----
DELETE FROM logs WHERE ctid IN (SELECT ctid FROM logs ORDER BY ts LIMIT 5000)
----
DELETE FROM t RETURNING OLD.*
----
DELETE FROM t WHERE id = 3 RETURNING WITH (OLD AS gone) gone.id, gone.v
----
DELETE FROM notifications WHERE user_id = $1::bigint AND read = true AND created_at < now() - interval '30 days'
----
DELETE FROM dup_rows a USING dup_rows b WHERE a.id > b.id AND a.email = b.email
----
DELETE FROM inventory WHERE qty = 0 AND sku LIKE 'TMP-%'
----
DELETE FROM ledger WHERE (account_id, entry_no) IN ((1, 10), (1, 11), (2, 3))
----
DELETE FROM cache WHERE key = $1 RETURNING value, expires_at
----
DELETE FROM msg.queue_jobs WHERE id = $1 RETURNING id, payload, enqueued_at
----
DELETE FROM consumer_offsets WHERE group_id = 'stale-group' AND partition_id BETWEEN 0 AND 29
----
DELETE FROM shards.users_3 WHERE user_id = 3003
----
DELETE FROM documents d USING (VALUES (1), (2), (3)) AS v(id) WHERE d.id = v.id
----
DELETE FROM documents WHERE topic_id = $1::int RETURNING id
----
DELETE FROM accounts WHERE CURRENT OF acct_cursor RETURNING id
----
DELETE FROM session_tokens t WHERE t.user_id IN (SELECT id FROM users WHERE disabled) RETURNING t.token
----
DELETE FROM tmp_import
----
DELETE FROM measurements WHERE recorded_at < date_trunc('month', now()) - interval '6 months' AND sensor_id <> ALL (ARRAY[1, 2])
----
DELETE FROM t WHERE a IS NULL OR b IS NULL OR (a = b AND c IS DISTINCT FROM d)
----
DELETE FROM carts WHERE user_id = 12 RETURNING id, user_id, jsonb_array_length(items) AS n_items
----
DELETE FROM followers WHERE (follower_id = $1 AND followee_id = $2) OR (follower_id = $2 AND followee_id = $1)
----
DELETE FROM ONLY measurements_parent m USING sensors s WHERE m.sensor_id = s.id AND s.retired
----
DELETE FROM t1 WHERE id IN (WITH old AS (SELECT id FROM t1 WHERE ts < now() - interval '1 day') SELECT id FROM old)
