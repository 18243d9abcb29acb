SELECT * FROM accounts WHERE id = 1 FOR UPDATE
----
SELECT * FROM accounts WHERE id = $1 FOR UPDATE NOWAIT
----
SELECT * FROM accounts WHERE id = $1 FOR UPDATE SKIP LOCKED
----
SELECT * FROM accounts WHERE id = 1 FOR NO KEY UPDATE
----
SELECT * FROM accounts WHERE id = 1 FOR NO KEY UPDATE NOWAIT
----
SELECT * FROM accounts WHERE id = 1 FOR SHARE
----
SELECT * FROM accounts WHERE id = 1 FOR SHARE SKIP LOCKED
----
SELECT * FROM accounts WHERE id = 1 FOR KEY SHARE
----
SELECT * FROM accounts WHERE id = 1 FOR KEY SHARE NOWAIT
----
SELECT a.*, b.* FROM accounts a JOIN branches b ON b.id = a.branch_id WHERE a.id = 5 FOR UPDATE OF a
----
SELECT a.*, b.* FROM accounts a JOIN branches b ON b.id = a.branch_id WHERE a.id = 5 FOR UPDATE OF a, b NOWAIT
----
SELECT a.*, b.* FROM accounts a JOIN branches b ON b.id = a.branch_id FOR UPDATE OF a FOR SHARE OF b
----
SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id = 9 FOR NO KEY UPDATE OF o SKIP LOCKED FOR KEY SHARE OF c
----
SELECT id FROM jobs WHERE state = 'queued' ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED
----
SELECT id FROM jobs WHERE state = 'queued' ORDER BY priority DESC, created_at FOR UPDATE SKIP LOCKED LIMIT 10
----
SELECT * FROM jobs WHERE queue = $1 AND run_at <= now() ORDER BY run_at LIMIT $2 FOR NO KEY UPDATE SKIP LOCKED
----
SELECT * FROM t FOR UPDATE OF t NOWAIT
----
SELECT * FROM inventory WHERE sku = ANY ($1::text[]) ORDER BY sku FOR UPDATE
----
SELECT balance FROM wallets WHERE user_id = $1::bigint AND tenant_id = $2 FOR UPDATE
----
SELECT * FROM users WHERE tenant_id = 3 FOR SHARE OF users
----
SELECT * FROM public.accounts WHERE id IN (1, 2, 3) ORDER BY id FOR UPDATE OF accounts
----
SELECT * FROM (SELECT * FROM t WHERE x > 1) sub FOR UPDATE
----
SELECT * FROM t1, t2 WHERE t1.id = t2.id FOR UPDATE OF t1 FOR NO KEY UPDATE OF t2 NOWAIT
----
SELECT id FROM seats WHERE show_id = 17 AND reserved = false LIMIT 4 FOR UPDATE SKIP LOCKED
----
SELECT * FROM leases WHERE resource = 'cron' FOR UPDATE NOWAIT
----
SELECT pg_advisory_lock(12345)
----
SELECT pg_try_advisory_xact_lock(hashtext($1))
----
SELECT pg_advisory_unlock_all()
----
SELECT * FROM consumer_offsets WHERE group_id = $1 AND partition_id = $2 FOR UPDATE
----
SELECT * FROM "Accounts" "A" WHERE "A"."Id" = 1 FOR UPDATE OF "A"
----
SELECT * FROM t WHERE id = 1 FOR KEY SHARE OF t SKIP LOCKED
----
SELECT * FROM t ORDER BY id OFFSET 10 FETCH FIRST 5 ROWS ONLY FOR UPDATE
----
LOCK TABLE accounts
----
LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE
----
LOCK accounts, branches IN SHARE ROW EXCLUSIVE MODE NOWAIT
----
LOCK TABLE ONLY parent_tbl IN ROW EXCLUSIVE MODE
----
LOCK TABLE t IN ACCESS SHARE MODE
----
LOCK TABLE t IN ROW SHARE MODE
----
LOCK TABLE t IN SHARE UPDATE EXCLUSIVE MODE
----
LOCK TABLE t IN SHARE MODE
----
LOCK TABLE t IN EXCLUSIVE MODE
----
LOCK TABLE public.t * IN SHARE MODE
