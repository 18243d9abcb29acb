MERGE INTO customer_account ca USING recent_transactions t ON t.customer_id = ca.customer_id WHEN MATCHED THEN UPDATE SET balance = balance + transaction_value WHEN NOT MATCHED THEN INSERT (customer_id, balance) VALUES (t.customer_id, t.transaction_value)
----
MERGE INTO customer_account ca USING (SELECT customer_id, transaction_value FROM recent_transactions) AS t ON t.customer_id = ca.customer_id WHEN MATCHED THEN UPDATE SET balance = balance + transaction_value WHEN NOT MATCHED THEN INSERT (customer_id, balance) VALUES (t.customer_id, t.transaction_value)
----
MERGE INTO wines w
USING wine_stock_changes s
ON s.winename = w.winename
WHEN NOT MATCHED AND s.stock_delta > 0 THEN
  INSERT VALUES(s.winename, s.stock_delta)
WHEN MATCHED AND w.stock + s.stock_delta > 0 THEN
  UPDATE SET stock = w.stock + s.stock_delta
WHEN MATCHED THEN
  DELETE
----
MERGE INTO products p USING staging_products s ON p.sku = s.sku WHEN MATCHED THEN DO NOTHING WHEN NOT MATCHED THEN INSERT (sku, name) VALUES (s.sku, s.name)
----
MERGE INTO products p USING staging_products s ON p.sku = s.sku WHEN NOT MATCHED BY SOURCE THEN DELETE
----
MERGE INTO products p USING staging_products s ON p.sku = s.sku WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED BY TARGET THEN INSERT VALUES (s.sku, s.name) WHEN NOT MATCHED BY SOURCE AND p.discontinued = false THEN UPDATE SET discontinued = true
----
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v RETURNING merge_action(), t.*
----
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT DEFAULT VALUES RETURNING merge_action() AS action, old.id, new.id
----
MERGE INTO inventory AS i USING (VALUES ('A', 5), ('B', -2)) AS d(sku, delta) ON i.sku = d.sku WHEN MATCHED THEN UPDATE SET qty = i.qty + d.delta WHEN NOT MATCHED THEN INSERT (sku, qty) VALUES (d.sku, d.delta)
----
MERGE INTO accounts a USING (SELECT $1::bigint AS id, $2::numeric AS amt) src ON a.id = src.id WHEN MATCHED THEN UPDATE SET balance = a.balance + src.amt WHEN NOT MATCHED THEN INSERT (id, balance) VALUES (src.id, src.amt)
----
MERGE INTO ONLY parent_tbl p USING updates u ON p.id = u.id WHEN MATCHED THEN UPDATE SET (a, b) = (u.a, u.b)
----
MERGE INTO target t USING source s ON t.k = s.k AND t.tenant_id = s.tenant_id WHEN MATCHED AND s.deleted THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v, updated_at = now() WHEN NOT MATCHED AND NOT s.deleted THEN INSERT (k, tenant_id, v) VALUES (s.k, s.tenant_id, s.v)
----
MERGE INTO t USING (SELECT * FROM s WHERE batch = 7) s ON (t.id = s.id) WHEN NOT MATCHED THEN INSERT (id) OVERRIDING SYSTEM VALUE VALUES (s.id)
----
MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, v) OVERRIDING USER VALUE VALUES (DEFAULT, s.v)
----
MERGE INTO "Target Table" AS "T" USING "Source" AS "S" ON "T"."Id" = "S"."Id" WHEN MATCHED THEN UPDATE SET "Value" = "S"."Value"
----
MERGE INTO daily_stats ds USING (SELECT tenant_id, current_date AS d, count(*) c FROM events WHERE created_at >= current_date GROUP BY tenant_id) e ON ds.tenant_id = e.tenant_id AND ds.day = e.d WHEN MATCHED THEN UPDATE SET cnt = e.c WHEN NOT MATCHED THEN INSERT (tenant_id, day, cnt) VALUES (e.tenant_id, e.d, e.c)
----
MERGE INTO kv USING (VALUES ($1, $2)) AS v(k, val) ON kv.k = v.k WHEN MATCHED AND kv.val IS DISTINCT FROM v.val THEN UPDATE SET val = v.val WHEN MATCHED THEN DO NOTHING WHEN NOT MATCHED THEN INSERT VALUES (v.k, v.val)
----
MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE AND t.ts < now() - interval '1 day' THEN DELETE WHEN NOT MATCHED BY SOURCE THEN DO NOTHING
----
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = DEFAULT
----
MERGE INTO consumer_offsets co USING (SELECT $1::text AS group_id, $2::int AS partition_id, $3::bigint AS off) x ON co.group_id = x.group_id AND co.partition_id = x.partition_id WHEN MATCHED THEN UPDATE SET committed_offset = GREATEST(co.committed_offset, x.off) WHEN NOT MATCHED THEN INSERT (group_id, partition_id, committed_offset) VALUES (x.group_id, x.partition_id, x.off) RETURNING co.committed_offset
----
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v RETURNING WITH (OLD AS o, NEW AS n) o.v, n.v, merge_action()
----
MERGE INTO users u USING invites i ON u.email = i.email WHEN NOT MATCHED THEN INSERT (email, tenant_id, invited_by) VALUES (i.email, i.tenant_id, i.sender_id) WHEN MATCHED AND u.tenant_id IS NULL THEN UPDATE SET tenant_id = i.tenant_id
----
MERGE INTO t USING (t2 JOIN t3 ON t2.id = t3.id) ON t.id = t2.id WHEN MATCHED THEN DELETE
----
MERGE INTO t tt USING LATERAL (SELECT 1 AS id) s ON tt.id = s.id WHEN MATCHED THEN DO NOTHING
----
MERGE INTO stock s USING orders o ON s.item = o.item WHEN MATCHED AND s.qty - o.qty < 0 THEN UPDATE SET qty = 0, backorder = true WHEN MATCHED THEN UPDATE SET qty = s.qty - o.qty
----
MERGE INTO public.price_list pl USING imports.price_feed f ON pl.sku = f.sku AND pl.region = f.region WHEN MATCHED THEN UPDATE SET price = f.price, currency = f.currency WHEN NOT MATCHED THEN INSERT (sku, region, price, currency) VALUES (f.sku, f.region, f.price, f.currency) WHEN NOT MATCHED BY SOURCE AND pl.region = 'US' THEN DELETE
----
WITH s AS (SELECT * FROM staging) MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v) RETURNING t.id
----
MERGE INTO tbl USING (SELECT unnest($1::int[]) AS id) src ON tbl.id = src.id WHEN NOT MATCHED THEN INSERT (id) VALUES (src.id)
----
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND (s.a, s.b) IS DISTINCT FROM (t.a, t.b) THEN UPDATE SET (a, b) = (s.a, s.b)
----
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET (a, b) = (SELECT x, y FROM u WHERE u.id = s.id)
