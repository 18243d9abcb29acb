INSERT INTO users VALUES (1, 'alice@example.com', 'Alice')
----
INSERT INTO users (id, email, name) VALUES (2, 'bob@example.com', 'Bob')
----
INSERT INTO users (email, tenant_id) VALUES ($1, $2) RETURNING id
----
INSERT INTO users (email, tenant_id) VALUES ($1, $2::bigint) RETURNING *
----
INSERT INTO public.users AS u (email, tenant_id) VALUES ('c@example.com', 7) RETURNING u.id, u.created_at
----
INSERT INTO products (sku, name, price) VALUES ('A-1', 'Anvil', 99.95), ('B-2', 'Bucket', 4.50), ('C-3', 'Crowbar', 15.00)
----
INSERT INTO readings (sensor_id, ts, value) VALUES (1, now(), 20.5), (1, now() - interval '1 minute', 20.4), (2, now(), -3.25), (3, DEFAULT, NULL)
----
INSERT INTO counters DEFAULT VALUES
----
INSERT INTO counters DEFAULT VALUES RETURNING id
----
INSERT INTO audit (ts, actor) VALUES (DEFAULT, current_user)
----
INSERT INTO archive_orders SELECT * FROM orders WHERE created_at < '2020-01-01'
----
INSERT INTO archive_orders (id, total) SELECT id, total FROM orders WHERE tenant_id = $1 AND status = 'closed' ORDER BY id LIMIT 1000
----
INSERT INTO daily_totals (day, tenant_id, total) SELECT date_trunc('day', created_at), tenant_id, sum(total) FROM orders GROUP BY 1, 2
----
INSERT INTO identity_tbl (id, name) OVERRIDING SYSTEM VALUE VALUES (100, 'forced')
----
INSERT INTO identity_tbl (id, name) OVERRIDING USER VALUE VALUES (5, 'ignored id')
----
INSERT INTO kv (k, v) VALUES ('a', '1') ON CONFLICT DO NOTHING
----
INSERT INTO kv (k, v) VALUES ('a', '1') ON CONFLICT (k) DO NOTHING
----
INSERT INTO kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v
----
INSERT INTO kv AS t (k, v, updated_at) VALUES ($1, $2, now()) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v, updated_at = EXCLUDED.updated_at WHERE t.v IS DISTINCT FROM EXCLUDED.v
----
INSERT INTO inventory (sku, warehouse_id, qty) VALUES ('X', 1, 10) ON CONFLICT (sku, warehouse_id) DO UPDATE SET qty = inventory.qty + EXCLUDED.qty RETURNING qty
----
INSERT INTO inventory (sku, warehouse_id, qty) VALUES ('X', 1, 10) ON CONFLICT ON CONSTRAINT inventory_pkey DO UPDATE SET qty = EXCLUDED.qty
----
INSERT INTO inventory (sku, warehouse_id, qty) VALUES ('Y', 2, 1) ON CONFLICT ON CONSTRAINT inventory_sku_wh_key DO NOTHING
----
INSERT INTO emails (address) VALUES ('X@Y.com') ON CONFLICT (lower(address)) DO NOTHING
----
INSERT INTO subscriptions (user_id, plan) VALUES (1, 'pro') ON CONFLICT (user_id) WHERE active DO UPDATE SET plan = EXCLUDED.plan
----
INSERT INTO names (n) VALUES ('x') ON CONFLICT (n COLLATE "C" text_pattern_ops) DO NOTHING
----
INSERT INTO stats (tenant_id, day, hits) VALUES (3, current_date, 1) ON CONFLICT (tenant_id, day) DO UPDATE SET hits = stats.hits + 1, last_hit = now() WHERE stats.hits < 1000000 RETURNING hits
----
INSERT INTO users (id, profile) VALUES (1, '{}') ON CONFLICT (id) DO UPDATE SET (profile, updated_at) = (EXCLUDED.profile, now())
----
INSERT INTO users (id, profile) VALUES (1, '{}') ON CONFLICT (id) DO UPDATE SET (profile, version) = (SELECT EXCLUDED.profile, users.version + 1)
----
INSERT INTO tags (name) SELECT unnest($1::text[]) ON CONFLICT (name) DO NOTHING RETURNING id, name
----
INSERT INTO t (a, b) SELECT x, y FROM unnest($1::int[], $2::text[]) AS u(x, y)
----
INSERT INTO points (p) VALUES (point(1, 2)), ('(3,4)')
----
INSERT INTO docs (body) VALUES ($body$It's a "quoted" body$body$)
----
INSERT INTO files (name, data) VALUES ('logo.png', '\x89504e47'::bytea), ('empty.bin', ''::bytea)
----
INSERT INTO arrays (ints, texts) VALUES (ARRAY[1, 2, 3], '{"a","b"}'), ('{}', ARRAY[]::text[])
----
INSERT INTO comp (addr.street, addr.city) VALUES ('Main St', 'Springfield')
----
INSERT INTO arr_tbl (vals[1], vals[3]) VALUES (10, 30)
----
INSERT INTO "Users" ("Id", "Email Address") VALUES (1, 'x@y')
----
INSERT INTO orders (tenant_id, user_id, total) VALUES (1, 100, 9.99) RETURNING id AS order_id, total * 1.2 AS gross
----
INSERT INTO orders (tenant_id, user_id, total) VALUES (1, 100, 9.99) RETURNING OLD.total, NEW.total
----
INSERT INTO kv (k, v) VALUES ('a', 'b') ON CONFLICT (k) DO UPDATE SET v = 'c' RETURNING WITH (OLD AS o, NEW AS n) o.v AS old_v, n.v AS new_v
----
INSERT INTO events (tenant_id, kind, payload) VALUES ($1, $2, $3), ($4, $5, $6), ($7, $8, $9), ($10, $11, $12)
----
INSERT INTO t VALUES ((SELECT max(id) + 1 FROM t), 'next')
----
INSERT INTO logs (level, msg) VALUES ('info', E'started\n'), ('warn', E'disk at 90%\t!')
----
INSERT INTO metrics (name, value, tags) VALUES ('cpu', 0.75, '{"host":"a"}'::jsonb) ON CONFLICT DO NOTHING RETURNING *
----
INSERT INTO parent_tbl (id, region) VALUES (1, 'us-east') RETURNING tableoid::regclass
----
INSERT INTO sales_2024 SELECT * FROM sales WHERE sold_at >= '2024-01-01' AND sold_at < '2025-01-01' ON CONFLICT DO NOTHING
----
INSERT INTO users (tenant_id, email) SELECT 9, email FROM invitations WHERE accepted AND NOT EXISTS (SELECT 1 FROM users WHERE users.email = invitations.email)
----
INSERT INTO t (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id WHERE false
----
INSERT INTO session_store (sid, data, expires) VALUES ($1, $2, to_timestamp($3)) ON CONFLICT (sid) DO UPDATE SET data = EXCLUDED.data, expires = EXCLUDED.expires
----
INSERT INTO user_roles (user_id, role_id) SELECT $1, r.id FROM roles r WHERE r.name = ANY ($2::text[]) ON CONFLICT DO NOTHING
----
INSERT INTO t1 TABLE t2
----
INSERT INTO t1 (a) VALUES (1) UNION ALL SELECT 2
----
INSERT INTO t1 (a) (SELECT 3 UNION SELECT 4)
----
INSERT INTO big (c1, c2, c3, c4, c5, c6, c7, c8) VALUES (1, 2.5, 'three', true, NULL, now(), '{}', ARRAY[8])
----
INSERT INTO accounts (user_id, balance) VALUES (42, 0) ON CONFLICT (user_id) DO UPDATE SET balance = accounts.balance WHERE accounts.frozen = false RETURNING (xmax = 0) AS inserted
----
INSERT INTO ledger (account_id, delta, memo) VALUES (7, -15.00, 'fee'), (8, 15.00, 'fee')
----
INSERT INTO tenant_users (tenant_id, user_id) VALUES (1, 1), (1, 2), (2, 3), (2, 4), (3, 5)
----
INSERT INTO geo (id, loc) VALUES (1, ST_SetSRID(ST_MakePoint(-71.06, 42.36), 4326))
----
INSERT INTO schedule (during) VALUES (tstzrange('2024-01-01 10:00', '2024-01-01 11:00', '[)'))
----
INSERT INTO ip_log (addr) VALUES ('10.1.2.3'::inet), (inet '2001:db8::1')
----
INSERT INTO settings (k, v) VALUES ('enabled', true::text), ('ratio', 0.5::text), ('max', 10::text)
----
INSERT INTO topics (id, name) VALUES (nextval('topics_id_seq'), 'orders') RETURNING id
----
INSERT INTO events (user_id, name) VALUES ($1::bigint, $2::varchar(64)) RETURNING id, user_id
----
INSERT INTO msg.events_p12 ("offset", payload, created_at) VALUES ($1, $2, now())
----
INSERT INTO child (parent_id, v) SELECT p.id, 'default' FROM parent p LEFT JOIN child c ON c.parent_id = p.id WHERE c.parent_id IS NULL
----
INSERT INTO t (a, b) VALUES (1, 2) ON CONFLICT (a) DO UPDATE SET b = (SELECT max(b) FROM t) + 1
----
INSERT INTO "schema"."table" ("column") VALUES ('value')
----
INSERT INTO t (a) SELECT generate_series(1, 100)
----
INSERT INTO ts_tbl (t) VALUES (TIMESTAMP WITH TIME ZONE '2024-01-01 00:00:00+00')
----
INSERT INTO users (id, tenant_id, email) VALUES (10, 1, 'a@a'), (11, 1, 'b@b') ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, tenant_id = EXCLUDED.tenant_id WHERE users.tenant_id = EXCLUDED.tenant_id RETURNING id, (xmax <> 0) AS updated
