SELECT 1; SELECT 2
----
SELECT 1; SELECT 2;
----
BEGIN; UPDATE accounts SET balance = balance - 100 WHERE id = 1; UPDATE accounts SET balance = balance + 100 WHERE id = 2; COMMIT
----
BEGIN; SELECT * FROM jobs WHERE id = 5 FOR UPDATE; UPDATE jobs SET state = 'running' WHERE id = 5; COMMIT;
----
SET search_path TO tenant_4; SELECT * FROM orders LIMIT 10
----
SET LOCAL statement_timeout = '5s'; SELECT pg_sleep(1)
----
CREATE TEMP TABLE tmp (id int); INSERT INTO tmp VALUES (1), (2); SELECT sum(id) FROM tmp; DROP TABLE tmp
----
SET pgdog.shard = 3; SELECT * FROM users WHERE email = 'x@y'
----
SET pgdog.sharding_key = 'acme'; UPDATE settings SET v = 'on' WHERE k = 'feature_x'; RESET pgdog.sharding_key
----
LISTEN a; LISTEN b; NOTIFY a, 'ping'
----
SAVEPOINT s1; INSERT INTO t VALUES (1); ROLLBACK TO SAVEPOINT s1; RELEASE SAVEPOINT s1
----
PREPARE p AS SELECT $1::int + 1; EXECUTE p(41); DEALLOCATE p
----
DECLARE c CURSOR FOR SELECT * FROM big; FETCH 100 FROM c; CLOSE c
----
SELECT 1;; SELECT 2
----
BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT sum(balance) FROM accounts; COMMIT
----
DISCARD ALL; SET application_name = 'app'
----
INSERT INTO a VALUES (1); INSERT INTO b VALUES (2); INSERT INTO c VALUES (3); INSERT INTO d VALUES (4); INSERT INTO e VALUES (5)
----
UPDATE log_counters SET next_offset = next_offset + 10 WHERE partition_id = 3 RETURNING next_offset; INSERT INTO events_p3 ("offset", payload) VALUES (90, '\x00')
----
-- comment before first
SELECT 1; -- comment between
SELECT 2 /* after second */
----
SET TIME ZONE 'UTC'; SHOW TIME ZONE
----
CREATE TABLE x (a int); CREATE INDEX ON x (a); ANALYZE x
----
BEGIN; LOCK TABLE t IN EXCLUSIVE MODE; TRUNCATE t; COMMIT
----
SELECT set_config('app.tenant', '9', true); SELECT * FROM docs
----
DO $$ BEGIN NULL; END $$; SELECT 'after do'
----
CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$; SELECT f()
----
START TRANSACTION READ ONLY; SELECT count(*) FROM orders; ROLLBACK
----
VACUUM ANALYZE a; VACUUM ANALYZE b
----
WITH x AS (SELECT 1) SELECT * FROM x; WITH y AS (SELECT 2) SELECT * FROM y
----
COPY t FROM STDIN; SELECT count(*) FROM t
----
BEGIN; PREPARE TRANSACTION 'gid-1'; COMMIT PREPARED 'gid-1'
----
SELECT 'a;b'; SELECT $$c;d$$; SELECT "e;f" FROM g
----
/* pgdog_shard: 2 */ SELECT 1; SELECT 2
