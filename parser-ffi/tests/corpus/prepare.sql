PREPARE q1 AS SELECT * FROM users WHERE id = $1
----
PREPARE q2 (int) AS SELECT * FROM users WHERE tenant_id = $1
----
PREPARE q3 (bigint, text) AS UPDATE users SET name = $2 WHERE id = $1
----
PREPARE ins_user (text, int, timestamptz) AS INSERT INTO users (email, tenant_id, created_at) VALUES ($1, $2, $3) RETURNING id
----
PREPARE del_old (interval) AS DELETE FROM sessions WHERE created_at < now() - $1
----
PREPARE arr_q (bigint[]) AS SELECT * FROM users WHERE id = ANY ($1)
----
PREPARE "Quoted Plan" AS SELECT 1
----
PREPARE __pgdog_1 AS SELECT "offset", payload FROM events_p3 WHERE "offset" BETWEEN $1 AND $2 ORDER BY "offset"
----
PREPARE stmt_merge (int, text) AS MERGE INTO kv USING (SELECT $1 AS k, $2 AS v) s ON kv.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.v)
----
PREPARE stmt_v (numeric(10,2), character varying(20)) AS VALUES ($1, $2)
----
PREPARE p_cte AS WITH x AS (SELECT $1::int AS a) SELECT a FROM x
----
EXECUTE q1(1)
----
EXECUTE q1 (42)
----
EXECUTE q2(7)
----
EXECUTE q3(5, 'new name')
----
EXECUTE ins_user('a@b.c', 3, now())
----
EXECUTE del_old('7 days')
----
EXECUTE arr_q('{1,2,3}')
----
EXECUTE arr_q(ARRAY[1, 2, 3]::bigint[])
----
EXECUTE "Quoted Plan"
----
EXECUTE __pgdog_1(100, 200)
----
EXECUTE stmt_v(1.5 + 2, 'x' || 'y')
----
DEALLOCATE q1
----
DEALLOCATE PREPARE q2
----
DEALLOCATE ALL
----
DEALLOCATE PREPARE ALL
----
DEALLOCATE "Quoted Plan"
----
DISCARD ALL
----
DISCARD PLANS
----
DISCARD TEMP
----
DISCARD TEMPORARY
----
DISCARD SEQUENCES
----
CREATE TABLE recent_users AS EXECUTE q2(3)
----
EXPLAIN EXECUTE q1(1)
----
EXPLAIN (ANALYZE, BUFFERS) EXECUTE q3(1, 'z')
----
SELECT name, statement, parameter_types FROM pg_prepared_statements
----
PREPARE sel_tenant (int, int) AS SELECT * FROM orders WHERE tenant_id = $1 AND user_id = $2 FOR UPDATE
----
PREPARE upd_counter AS UPDATE log_counters SET next_offset = next_offset + $2 WHERE partition_id = $1 RETURNING next_offset
