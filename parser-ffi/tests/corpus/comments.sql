-- leading line comment
SELECT 1
----
SELECT 2 -- trailing line comment
----
/* block comment */ SELECT 3
----
SELECT 4 /* trailing block comment */
----
SELECT /* inner */ 5 /* another */ AS /* even here */ five
----
/* pgdog_shard: 1 */ SELECT * FROM users WHERE email = 'a@b.c'
----
/* pgdog_shard: 0 */ UPDATE users SET name = 'x' WHERE email = $1
----
/* pgdog_sharding_key: 42 */ SELECT * FROM orders WHERE status = 'open'
----
/* pgdog_sharding_key: 'tenant-acme' */ DELETE FROM carts WHERE expired
----
/*pgdog_shard:3*/SELECT count(*) FROM events
----
SELECT * FROM orders WHERE id = $1 /* pgdog_shard: 2 */
----
SELECT * FROM orders /* pgdog_sharding_key: 1001 */ WHERE user_id = 1001
----
/* outer /* nested */ still comment */ SELECT 6
----
/* level1 /* level2 /* level3 */ back2 */ back1 */ SELECT 7
----
SELECT 8 /* nested /* inside */ trailing */
----
-- first line
-- second line
/* and a block
   spanning lines */
SELECT 9
----
SELECT
  id, -- the primary key
  email -- user email
FROM users -- table
WHERE tenant_id = 5 -- shard key
----
SELECT
  /* columns */
  a,
  /* b is computed */ b * 2 AS b2
FROM /* source */ t
----
/* application: billing, controller: invoices#show */ SELECT * FROM invoices WHERE id = 12
----
/*application:web,controller:users,action:index,db_host:primary*/ SELECT "users".* FROM "users" LIMIT 25
----
SELECT * FROM users WHERE id = 1 /*traceparent='00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'*/
----
-- pgdog_shard: 4
SELECT * FROM users
----
SELECT '-- not a comment' AS s, '/* also not */' AS t
----
SELECT "col--name", "col/*x*/" FROM "tbl--x"
----
SELECT $$ -- inside dollar $$ AS d -- real comment
----
INSERT INTO t (a) VALUES (1) -- trailing after insert
----
/* pgdog_sharding_key: 7 */ INSERT INTO orders (tenant_id, total) VALUES (7, 1.00) RETURNING id
----
BEGIN /* start */
----
/* commit it */ COMMIT
----
SET pgdog.shard = 2 -- route
----
/* pgdog_shard: 5 */ /* extra */ -- and a line
SELECT 10
----
SELECT 1 - -1, 2 -/**/- 2
----
SELECT 11 /**/
----
/**/SELECT/**/12/**/
----
SELECT 13 --
----
/* multi
   line
   /* with nested
      block */
   end */
UPDATE t SET a = 1 WHERE id = 9
----
WITH /* cte comment */ x AS (SELECT 1 /* inner */) SELECT * FROM x -- done
----
SELECT * FROM t WHERE a = 1 -- AND b = 2
  AND c = 3
----
/* pgdog_shard: 1 */ BEGIN
----
/* pgdog_sharding_key: $1 */ SELECT * FROM accounts WHERE id = $1
----
SELECT 14; -- statement comment after semicolon
----
/* leading */ ; SELECT 15
