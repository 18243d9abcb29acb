EXPLAIN SELECT * FROM users WHERE id = 1
----
EXPLAIN ANALYZE SELECT * FROM users WHERE tenant_id = 3
----
EXPLAIN VERBOSE SELECT count(*) FROM orders
----
EXPLAIN ANALYZE VERBOSE SELECT * FROM a JOIN b USING (id)
----
EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM orders WHERE user_id = $1
----
EXPLAIN (ANALYZE true, COSTS false, TIMING off, SUMMARY on) SELECT 1
----
EXPLAIN (FORMAT YAML, SETTINGS, WAL) UPDATE t SET a = 1 WHERE id = 2
----
EXPLAIN (GENERIC_PLAN) SELECT * FROM users WHERE id = $1
----
EXPLAIN (ANALYZE, SERIALIZE binary, MEMORY) SELECT * FROM big_table
----
EXPLAIN (FORMAT XML, VERBOSE) DELETE FROM logs WHERE ts < now()
----
EXPLAIN (FORMAT TEXT) INSERT INTO t SELECT * FROM s
----
EXPLAIN MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE
----
EXPLAIN (COSTS OFF) WITH x AS (SELECT 1) SELECT * FROM x
----
EXPLAIN CREATE TABLE t2 AS SELECT * FROM t1
----
EXPLAIN (ANALYZE, BUFFERS off) DECLARE c CURSOR FOR SELECT 1
----
ANALYZE
----
ANALYZE users
----
ANALYZE VERBOSE orders (tenant_id, created_at)
----
ANALYZE (VERBOSE, SKIP_LOCKED) users, orders
----
ANALYZE (BUFFER_USAGE_LIMIT '16MB') big_table
----
ANALYZE ONLY partitioned_parent
----
VACUUM
----
VACUUM users
----
VACUUM FULL users
----
VACUUM FULL FREEZE VERBOSE ANALYZE orders
----
VACUUM (VERBOSE, ANALYZE) orders (tenant_id)
----
VACUUM (FULL, FREEZE, SKIP_LOCKED true, INDEX_CLEANUP auto, TRUNCATE false) t1, t2
----
VACUUM (PARALLEL 4, PROCESS_TOAST false, DISABLE_PAGE_SKIPPING) big_table
----
VACUUM (ONLY_DATABASE_STATS)
----
VACUUM (PROCESS_MAIN false, BUFFER_USAGE_LIMIT 0) t
----
VACUUM ANALYZE events_p0, events_p1, events_p2
----
CLUSTER
----
CLUSTER users
----
CLUSTER users USING users_pkey
----
CLUSTER VERBOSE orders
----
CLUSTER (VERBOSE) orders USING orders_created_at_idx
----
REINDEX INDEX users_email_idx
----
REINDEX TABLE users
----
REINDEX TABLE CONCURRENTLY orders
----
REINDEX SCHEMA public
----
REINDEX DATABASE app
----
REINDEX SYSTEM
----
REINDEX (VERBOSE) INDEX CONCURRENTLY idx_a
----
REINDEX (TABLESPACE fast_ssd, CONCURRENTLY) TABLE big_table
----
DO $$ BEGIN RAISE NOTICE 'hello'; END $$
----
DO $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' LOOP
    EXECUTE format('ANALYZE %I', r.tablename);
  END LOOP;
END
$$
----
DO LANGUAGE plpgsql $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'app') THEN
    CREATE ROLE app LOGIN;
  END IF;
END
$do$
----
DO 'BEGIN PERFORM pg_sleep(0.1); END'
----
DO $body$ DECLARE i int := 0; BEGIN WHILE i < 30 LOOP EXECUTE format('CREATE TABLE IF NOT EXISTS events_p%s (LIKE events_template INCLUDING ALL)', i); i := i + 1; END LOOP; END $body$ LANGUAGE plpgsql
----
CALL refresh_stats()
----
CALL transfer_funds(1, 2, 100.00)
----
CALL app.process_batch(batch_id => 17, dry_run => false)
----
CALL do_something($1, $2::text, NULL)
----
DECLARE c1 CURSOR FOR SELECT * FROM users
----
DECLARE c2 BINARY CURSOR FOR SELECT id FROM events
----
DECLARE c3 NO SCROLL CURSOR WITH HOLD FOR SELECT * FROM orders ORDER BY id
----
DECLARE c4 SCROLL CURSOR WITHOUT HOLD FOR SELECT * FROM t FOR UPDATE
----
DECLARE c5 INSENSITIVE CURSOR FOR VALUES (1), (2)
----
DECLARE c6 ASENSITIVE SCROLL CURSOR FOR TABLE accounts
----
FETCH c1
----
FETCH NEXT FROM c1
----
FETCH PRIOR FROM c1
----
FETCH FIRST FROM c1
----
FETCH LAST IN c1
----
FETCH ABSOLUTE 10 FROM c1
----
FETCH RELATIVE -2 FROM c1
----
FETCH 100 FROM c1
----
FETCH FORWARD 50 FROM c1
----
FETCH FORWARD ALL FROM c1
----
FETCH BACKWARD 5 IN c1
----
FETCH BACKWARD ALL FROM c1
----
FETCH ALL IN "Quoted Cursor"
----
MOVE c1
----
MOVE FORWARD 10 IN c1
----
MOVE LAST FROM c1
----
MOVE ABSOLUTE 0 FROM c1
----
CLOSE c1
----
CLOSE ALL
----
CHECKPOINT
----
LOAD 'auto_explain'
----
LOAD '$libdir/plugins/my_plugin'
----
SECURITY LABEL FOR selinux ON TABLE users IS 'system_u:object_r:sepgsql_table_t:s0'
----
IMPORT FOREIGN SCHEMA remote_public LIMIT TO (users, orders) FROM SERVER shard_1 INTO shard_1_public
----
REFRESH MATERIALIZED VIEW daily_summary
----
REFRESH MATERIALIZED VIEW CONCURRENTLY daily_summary WITH DATA
----
REFRESH MATERIALIZED VIEW stats WITH NO DATA
----
REASSIGN OWNED BY old_role TO new_role
----
DROP OWNED BY temp_role CASCADE
----
CREATE DATABASE shard_7 WITH OWNER = app TEMPLATE = template0 ENCODING = 'UTF8'
----
DROP DATABASE IF EXISTS shard_7 WITH (FORCE)
----
ALTER DATABASE shard_1 RENAME TO shard_01
----
SELECT pg_sleep(1)
----
SELECT pg_cancel_backend(12345), pg_terminate_backend(pid) FROM pg_stat_activity WHERE state = 'idle in transaction' AND query_start < now() - interval '10 minutes'
----
SELECT pg_reload_conf()
----
VALUES (pg_backend_pid())
----
CREATE TEMP TABLE scratch (id int) ON COMMIT DROP
----
EXPLAIN (ANALYZE) EXECUTE get_user(5)
----
SELECT * FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 20
